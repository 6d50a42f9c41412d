"""vkml.autograd (grad, backward, Function), higher derivatives and the grad modes, against torch.autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml

CPU = vkml.device("cpu")


def _pair(array, requires_grad=True, device=CPU):
    return vkml.tensor(array, device=device, requires_grad=requires_grad), torch.tensor(
        array, requires_grad=requires_grad
    )


def _close(v, t, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(v.numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


RNG = np.random.default_rng(3)
A = RNG.uniform(0.3, 1.5, (3, 4)).astype(np.float32)
B = RNG.standard_normal((4, 2)).astype(np.float32)

# (name, function of (x, y, namespace)): second derivatives through each op's rule
SECOND_ORDER = {
    "mul_pow": lambda x, y, ns: (x**3 * 2 - x * x).sum(),
    "exp_log": lambda x, y, ns: (ns.exp(x * 0.5) + ns.log(x)).sum(),
    "tanh_sigmoid": lambda x, y, ns: (ns.tanh(x) * ns.sigmoid(x)).sum(),
    "div_sqrt": lambda x, y, ns: (1.0 / x + ns.sqrt(x)).sum(),
    "matmul": lambda x, y, ns: ((x @ y) ** 2).sum(),
    "softmax": lambda x, y, ns: (ns.softmax(x, dim=1) * ns.arange(4.0)).sum(),
    "log_softmax_mean": lambda x, y, ns: (ns.log_softmax(x, dim=0) ** 2).mean(),
    "broadcast_sum": lambda x, y, ns: ((x.sum(0, keepdim=True) * x) ** 2).sum(),
    "reshape_transpose": lambda x, y, ns: (x.reshape(4, 3).transpose(0, 1) ** 3).sum(),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_create_graph_gives_torch_second_derivatives(name):
    fn = SECOND_ORDER[name]
    (x, xt), (y, yt) = _pair(A), _pair(B)
    got = vkml.autograd.grad(fn(x, y, vkml), [x, y], create_graph=True, allow_unused=True)
    want = torch.autograd.grad(fn(xt, yt, torch), [xt, yt], create_graph=True, allow_unused=True)
    assert [g is None for g in got] == [g is None for g in want]
    _close(got[0], want[0])
    assert got[0].requires_grad and got[0].grad_fn is not None
    sum((g * g).sum() for g in got if g is not None).backward()
    sum((g * g).sum() for g in want if g is not None).backward()
    _close(x.grad, xt.grad, rtol=1e-4, atol=1e-5)
    assert (y.grad is None) == (yt.grad is None)
    if y.grad is not None:
        _close(y.grad, yt.grad, rtol=1e-4, atol=1e-5)


def test_gradient_penalty_same_bits_on_cpu_and_vulkan(gpu):
    def penalty(device):
        w = vkml.tensor(B, device=device, requires_grad=True)
        x = vkml.tensor(A, device=device, requires_grad=True)
        (gx,) = vkml.autograd.grad(vkml.tanh(x @ w).sum(), x, create_graph=True)
        ((gx**2).sum()).backward()
        return w.grad.numpy(), x.grad.numpy()

    for got, want in zip(penalty(gpu), penalty(CPU)):
        assert_same_bits(got, want, "gradient of a gradient penalty")


def test_grad_leaves_dot_grad_alone_and_handles_several_outputs_and_inputs():
    (x, xt), (y, yt) = _pair(A[0]), _pair(A[1])
    h, ht = x * y, xt * yt  # a computed input: the gradient with respect to it
    outs = [(h * h).sum(), (x + h).exp()]
    outs_t = [(ht * ht).sum(), (xt + ht).exp()]
    weight = np.linspace(-1, 1, 4).astype(np.float32)
    got = vkml.autograd.grad(outs, [x, h, y], grad_outputs=[None, vkml.tensor(weight)])
    want = torch.autograd.grad(outs_t, [xt, ht, yt], grad_outputs=[None, torch.tensor(weight)])
    for g, w in zip(got, want):
        _close(g, w)
    assert x.grad is None and y.grad is None
    with pytest.raises(RuntimeError, match="second time"):
        vkml.autograd.grad(outs[0], x)  # retain_graph defaults to create_graph (False): the graph is gone


# Messages PyTorch reworded between releases: vkml follows the newer one (the GPU machine's torch is older).
_REWORDED = {
    "One of the differentiated Tensors appears to not have been used in the graph.": (
        "The differentiated Tensor at index 1 appears to not have been used in the graph."
    ),
}


def _errors_match(call_vkml, call_torch):
    with pytest.raises(Exception) as want:
        call_torch()
    with pytest.raises(type(want.value)) as got:
        call_vkml()
    expected = str(want.value).replace("TorchBad", "Bad")
    for old, new in _REWORDED.items():
        expected = expected.replace(old, new)
    assert str(got.value) == expected


def test_grad_errors_are_torchs():
    (x, xt), (z, zt) = _pair(A[0]), _pair(A[1])
    loss, loss_t = (x * 2).sum(), (xt * 2).sum()
    _errors_match(
        lambda: vkml.autograd.grad(loss, [x, z], retain_graph=True),
        lambda: torch.autograd.grad(loss_t, [xt, zt], retain_graph=True),
    )
    _errors_match(
        lambda: vkml.autograd.grad(loss, [vkml.ones(2)], retain_graph=True),
        lambda: torch.autograd.grad(loss_t, [torch.ones(2)], retain_graph=True),
    )
    _errors_match(
        lambda: vkml.autograd.grad(loss, [x], materialize_grads=True, allow_unused=False),
        lambda: torch.autograd.grad(loss_t, [xt], materialize_grads=True, allow_unused=False),
    )
    _errors_match(
        lambda: vkml.autograd.grad([loss, loss], [x], grad_outputs=[None], retain_graph=True),
        lambda: torch.autograd.grad([loss_t, loss_t], [xt], grad_outputs=[None], retain_graph=True),
    )
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        vkml.autograd.grad(vkml.ones(2).sum(), [x])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        vkml.autograd.grad(x * 2, [x])
    assert vkml.autograd.grad(loss, [x, z], allow_unused=True, retain_graph=True)[1] is None
    assert vkml.autograd.grad(loss, [x, z], materialize_grads=True)[1].tolist() == [0.0] * 4


def test_backward_with_several_tensors_and_inputs():
    (x, xt), (y, yt) = _pair(A[0]), _pair(A[1])
    vkml.autograd.backward([(x * y).sum(), (x**2).sum()])
    torch.autograd.backward([(xt * yt).sum(), (xt**2).sum()])
    _close(x.grad, xt.grad)
    _close(y.grad, yt.grad)
    (x * y).sum().backward(inputs=[y])  # only y accumulates
    (xt * yt).sum().backward(inputs=[yt])
    _close(x.grad, xt.grad)
    _close(y.grad, yt.grad)
    (x**3).sum().backward(create_graph=True)
    (xt**3).sum().backward(create_graph=True)
    assert x.grad.requires_grad and xt.grad.requires_grad
    _close(x.grad, xt.grad)
    with pytest.raises(RuntimeError, match="cannot be empty"):
        vkml.autograd.backward((x * 2).sum(), inputs=[])


class ScaledExp(vkml.autograd.Function):
    """exp(x) * k for a Python number k; saves its output; the second result is not differentiable."""

    @staticmethod
    def forward(ctx, x, k):
        y = x.exp() * k
        ctx.save_for_backward(y)
        ctx.k = k
        ctx.record_needs = ctx.needs_input_grad
        mask = x > 0
        ctx.mark_non_differentiable(mask)
        return y, mask

    @staticmethod
    def backward(ctx, g, g_mask):
        (y,) = ctx.saved_tensors
        return g * y, None


class TorchScaledExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        y = x.exp() * k
        ctx.save_for_backward(y)
        mask = x > 0
        ctx.mark_non_differentiable(mask)
        return y, mask

    @staticmethod
    def backward(ctx, g, g_mask):
        (y,) = ctx.saved_tensors
        return g * y, None


def test_function_forward_backward_and_double_backward_match_torch():
    x, xt = _pair(A[0] - 0.8)
    y, mask = ScaledExp.apply(x, 2.0)
    yt, mask_t = TorchScaledExp.apply(xt, 2.0)
    assert not mask.requires_grad and mask.tolist() == mask_t.tolist()
    assert y.grad_fn is not None and "ScaledExpBackward" in repr(y.grad_fn)
    (g,) = vkml.autograd.grad((y * y).sum(), x, create_graph=True)
    (gt,) = torch.autograd.grad((yt * yt).sum(), xt, create_graph=True)
    _close(g, gt)
    g.sum().backward()
    gt.sum().backward()
    _close(x.grad, xt.grad)


def test_function_needs_input_grad_setup_context_and_no_recording_without_grad():
    class Mul(vkml.autograd.Function):
        @staticmethod
        def forward(a, b):
            return a * b

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)
            ctx.seen = ctx.needs_input_grad

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return (g * b if ctx.needs_input_grad[0] else None), (g * a if ctx.needs_input_grad[1] else None)

    a = vkml.tensor([2.0, 3.0], requires_grad=True)
    b = vkml.tensor([5.0, 7.0])
    out = Mul.apply(a, b)
    out.sum().backward()
    assert a.grad.tolist() == [5.0, 7.0] and b.grad is None
    assert not Mul.apply(b, b).requires_grad
    with vkml.no_grad():
        assert not Mul.apply(a, b).requires_grad


def test_function_several_outputs_get_the_sum_of_their_gradients():
    class SplitScale(vkml.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    x = vkml.tensor([1.0, -1.0], requires_grad=True)
    p, q = SplitScale.apply(x)
    (p * 5 + q * 7).sum().backward()
    assert x.grad.tolist() == [31.0, 31.0]


def test_function_returning_an_input_keeps_the_input_a_leaf():
    class Identity(vkml.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 4

    x = vkml.tensor([1.0, 2.0], requires_grad=True)
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and not y.is_leaf
    y.sum().backward()
    assert x.grad.tolist() == [4.0, 4.0]

    class Frozen(vkml.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_non_differentiable(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    assert not Frozen.apply(x).requires_grad  # marked by the input's identity, which the result had


def _bad_function(backward_result):
    class Bad(vkml.autograd.Function):
        @staticmethod
        def forward(ctx, a, k):
            return a * k

        @staticmethod
        def backward(ctx, g):
            return backward_result(g)

    class TorchBad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, k):
            return a * k

        @staticmethod
        def backward(ctx, g):
            return backward_result(g)

    return Bad, TorchBad


@pytest.mark.parametrize(
    "result",
    [
        lambda g: g,
        lambda g: (g, g),
        lambda g: (g.sum() * g.new_ones(3) if hasattr(g, "new_ones") else g.sum() * vkml.ones(3), None),
    ],
    ids=["too-few", "non-tensor-input", "bad-shape"],
)
def test_function_backward_results_are_checked_as_torch_does(result):
    Bad, TorchBad = _bad_function(result)
    x, xt = _pair(np.ones(2, np.float32))
    _errors_match(lambda: Bad.apply(x, 2.0).sum().backward(), lambda: TorchBad.apply(xt, 2.0).sum().backward())


def test_function_saved_tensor_written_in_place_raises():
    class Square(vkml.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    x = vkml.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = Square.apply(h)
    with vkml.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_function_on_vulkan_gives_the_cpu_bits(gpu):
    def run(device):
        x = vkml.tensor(A[0] - 0.5, device=device, requires_grad=True)
        y, _ = ScaledExp.apply(x, 1.5)
        (g,) = vkml.autograd.grad((y * y).sum(), x, create_graph=True)
        g.sum().backward()
        return g.numpy(), x.grad.numpy()

    for got, want in zip(run(gpu), run(CPU)):
        assert_same_bits(got, want, "custom Function")


def test_inference_mode_and_grad_mode_decorators():
    w = vkml.ones(2, requires_grad=True)

    @vkml.inference_mode()
    def called():
        return w * 2, vkml.is_inference_mode_enabled(), vkml.is_grad_enabled()

    @vkml.inference_mode
    def bare():
        return w * 2

    @vkml.no_grad
    def bare_no_grad():
        return w * 2

    out, inside, grad_on = called()
    assert not out.requires_grad and inside and not grad_on
    assert not bare().requires_grad and not bare_no_grad().requires_grad
    assert vkml.is_grad_enabled() and not vkml.is_inference_mode_enabled()
    with vkml.inference_mode(False):
        assert (w * 2).requires_grad and not vkml.is_inference_mode_enabled()
    with vkml.inference_mode(mode=True):
        assert not (w * 2).requires_grad
    assert vkml.autograd.no_grad is vkml.no_grad and vkml.autograd.inference_mode is vkml.inference_mode

    @vkml.set_grad_enabled(False)
    def without_grad():
        return vkml.is_grad_enabled()

    assert vkml.is_grad_enabled() and not without_grad() and vkml.is_grad_enabled()


def test_grads_batched_post_accumulate_hooks_and_non_leaf_grad_match_torch():
    out = []
    for lib in (vkml, torch):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        unused = lib.tensor([1.0], requires_grad=True)
        y = x * x
        (jacobian, none) = lib.autograd.grad(y, [x, unused], lib.eye(3), is_grads_batched=True, allow_unused=True)
        assert none is None
        seen = []
        x.register_post_accumulate_grad_hook(lambda p, seen=seen: seen.append(p.grad.tolist()))
        (x * 3).sum().backward()
        (x * x).sum().backward()
        z = x * 2
        with pytest.warns(UserWarning, match="not a leaf Tensor is being accessed"):
            assert z.grad is None
        with pytest.raises(RuntimeError, match="non-leaf"):
            z.register_post_accumulate_grad_hook(lambda p: None)
        out.append((jacobian.tolist(), seen))
    assert out[0] == out[1]
