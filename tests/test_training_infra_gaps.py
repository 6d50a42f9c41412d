"""Gaps the training-infrastructure programs (tests/test_programs_infra.py) found, each against PyTorch."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

import vkml


def _square_function(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    return Square


@pytest.mark.parametrize("lib", [torch, vkml], ids=["torch", "vkml"])
def test_once_differentiable_backward_once_and_error_twice(lib):
    square = _square_function(lib)
    x = lib.tensor([1.5, -2.0], requires_grad=True)
    (g,) = lib.autograd.grad(square.apply(x).sum(), x)
    assert g.tolist() == [3.0, -4.0] and not g.requires_grad
    # the gradient reaching backward depends on x, so its result would be differentiated again
    (g,) = lib.autograd.grad(square.apply(x).pow(2).sum(), x, create_graph=True)
    assert g.requires_grad and g.tolist() == [13.5, -32.0]
    with pytest.raises(RuntimeError, match="differentiate twice a function that was marked with @once_differentiable"):
        g.sum().backward()
    assert x.grad is None  # the failed backward wrote nothing


def test_autograd_function_module_is_importable():
    module = importlib.import_module("vkml.autograd.function")
    assert module is vkml.autograd.function
    assert module.Function is vkml.autograd.Function and module.FunctionCtx is vkml.autograd.FunctionCtx
    assert issubclass(module.InplaceFunction, vkml.autograd.Function)
    assert module.InplaceFunction(inplace=True).inplace is True


def _ensemble(lib):
    lib.manual_seed(0)
    models = [lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.BatchNorm1d(2)) for _ in range(3)]
    with lib.no_grad():
        for i, model in enumerate(models):
            for j, p in enumerate(model.parameters()):
                p.copy_(lib.arange(p.numel(), dtype=lib.float32).reshape(p.shape) * 0.1 * (i + 1) - j)
    return models


@pytest.mark.stress  # a BatchNorm ensemble through vmap compiles ~40 kernels; test_research_program_idioms.py covers it by default
@pytest.mark.parametrize("lib", [torch, vkml], ids=["torch", "vkml"])
def test_stack_module_state(lib):
    models = _ensemble(lib)
    params, buffers = lib.func.stack_module_state(models)
    assert list(params) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert list(buffers) == ["1.running_mean", "1.running_var", "1.num_batches_tracked"]
    weight = params["0.weight"]
    assert tuple(weight.shape) == (3, 2, 3) and weight.is_leaf and weight.requires_grad
    assert not buffers["1.running_var"].requires_grad and buffers["1.num_batches_tracked"].dtype == lib.int64
    assert weight[2].tolist() == models[2][0].weight.tolist()
    x = lib.tensor([[1.0, -2.0, 0.5], [0.0, 1.0, 2.0]])
    for m in models:
        m.eval()
    params, buffers = lib.func.stack_module_state(models)

    def fmodel(p, b, inputs):
        return lib.func.functional_call(models[0], (p, b), (inputs,))

    out = lib.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x)
    assert (out - lib.stack([m(x) for m in models])).abs().max().item() < 1e-6
    out.sum().backward()
    assert params["0.weight"].grad is not None and models[0][0].weight.grad is None  # new leaves, not views


def _warmup_schedule(lib):
    """A warmup schedule written as many repositories write one, on the pre-2.0 base class."""

    class WarmupLinear(lib.optim.lr_scheduler._LRScheduler):
        def __init__(self, optimizer, warmup, total, last_epoch=-1):
            self.warmup, self.total = warmup, total
            super().__init__(optimizer, last_epoch)

        def get_lr(self):
            step = self.last_epoch + 1
            scale = (
                step / self.warmup if step < self.warmup else max(0.0, (self.total - step) / (self.total - self.warmup))
            )
            return [base_lr * scale for base_lr in self.base_lrs]

    w = lib.nn.Parameter(lib.ones(2))
    optimizer = lib.optim.SGD([{"params": [w]}, {"params": [lib.nn.Parameter(lib.ones(1))], "lr": 0.3}], lr=0.1)
    schedule = WarmupLinear(optimizer, warmup=3, total=8)
    lrs = []
    for _ in range(7):
        optimizer.step()
        schedule.step()
        lrs.append(schedule.get_last_lr())
    return lrs, schedule.state_dict()["last_epoch"], isinstance(schedule, lib.optim.lr_scheduler.LRScheduler)


def test_lr_scheduler_subclass_of_the_old_base_matches_pytorch():
    assert _warmup_schedule(vkml) == _warmup_schedule(torch)


def test_stateless_functional_call_and_dataloader_module_names():
    layer = vkml.nn.Linear(2, 1)
    params = {"weight": vkml.tensor([[1.0, -1.0]]), "bias": vkml.tensor([0.5])}
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        out = vkml.nn.utils.stateless.functional_call(layer, params, (vkml.tensor([[3.0, 1.0]]),))
    assert out.tolist() == [[2.5]] and layer.weight.tolist() != [[1.0, -1.0]]
    from vkml.utils.data.dataloader import default_collate, default_convert

    assert default_collate is vkml.utils.data.default_collate and default_convert is vkml.utils.data.default_convert
    batch = default_collate([{"x": vkml.tensor([1.0]), "y": 2}, {"x": vkml.tensor([3.0]), "y": 4}])
    assert batch["x"].tolist() == [[1.0], [3.0]] and batch["y"].tolist() == [2, 4]


def _fused(lib):
    rng = np.random.default_rng(3)

    def fill(module):
        with lib.no_grad():
            for t in [*module.parameters(), *module.buffers()]:
                if t.dtype == lib.float32:
                    t.copy_(lib.tensor(np.abs(rng.normal(size=tuple(t.shape))).astype(np.float32) + 0.1))
        return module.eval()

    conv, bn2 = fill(lib.nn.Conv2d(2, 3, 3)), fill(lib.nn.BatchNorm2d(3))
    up, bn_up = fill(lib.nn.ConvTranspose2d(3, 2, 2, bias=False)), fill(lib.nn.BatchNorm2d(2, affine=False))
    linear, bn1 = fill(lib.nn.Linear(4, 5)), fill(lib.nn.BatchNorm1d(5))
    x = lib.tensor(rng.normal(size=(1, 2, 5, 5)).astype(np.float32))
    fused_conv = lib.nn.utils.fuse_conv_bn_eval(conv, bn2)
    fused_up = lib.nn.utils.fuse_conv_bn_eval(up, bn_up, transpose=True)
    fused_linear = lib.nn.utils.fuse_linear_bn_eval(linear, bn1)
    z = lib.tensor(rng.normal(size=(3, 4)).astype(np.float32))
    return [
        fused_conv(x).tolist(),
        bn2(conv(x)).tolist(),
        fused_up(bn2(conv(x))).tolist(),
        fused_linear(z).tolist(),
        bn1(linear(z)).tolist(),
        [type(fused_conv.weight).__name__, fused_up.bias is not None, fused_conv is not conv],
    ]


def test_fuse_conv_and_linear_with_batchnorm_match_pytorch():
    got, expected = _fused(vkml), _fused(torch)
    assert got[-1] == expected[-1] == ["Parameter", True, True]
    for a, b in zip(got[:-1], expected[:-1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[0], got[1], rtol=1e-5, atol=1e-5)  # the fused conv is the pair
    np.testing.assert_allclose(got[3], got[4], rtol=1e-5, atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        vkml.nn.utils.fuse_conv_bn_eval(vkml.nn.Conv2d(1, 1, 1), vkml.nn.BatchNorm2d(1).eval())
    with pytest.raises(AssertionError, match="linear.out_features == bn.num_features"):
        vkml.nn.utils.fuse_linear_bn_eval(vkml.nn.Linear(2, 3).eval(), vkml.nn.BatchNorm1d(2).eval())


def test_skip_init():
    layer = vkml.nn.utils.skip_init(vkml.nn.Linear, 3, 2, bias=False)
    assert tuple(layer.weight.shape) == (2, 3) and layer.bias is None
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip initialization"):
        vkml.nn.utils.skip_init(vkml.nn.ReLU)


def _jvps(lib):
    rng = np.random.default_rng(4)
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(rng.normal(size=tuple(p.shape)).astype(np.float32)))
    x = lib.tensor(rng.normal(size=(5, 3)).astype(np.float32))
    t = lib.tensor(rng.normal(size=(5, 3)).astype(np.float32))
    out, along_x = lib.func.jvp(model, (x,), (t,))
    params = {k: v.detach() for k, v in model.named_parameters()}
    directions = {k: lib.ones_like(v) * 0.1 for k, v in params.items()}
    _, along_params = lib.func.jvp(lambda p: lib.func.functional_call(model, p, (x,)), (params,), (directions,))

    def loss(v):
        return (model(v) ** 2).sum()

    _, hvp = lib.func.jvp(lib.func.grad(loss), (x,), (t,))  # forward-over-reverse Hessian-vector product
    value, tangent, aux = lib.func.jvp(lambda v: (v.exp().sum(), v.mean()), (x,), (t,), has_aux=True)
    return [
        out.tolist(),
        along_x.tolist(),
        along_params.tolist(),
        hvp.tolist(),
        value.item(),
        tangent.item(),
        aux.item(),
        aux.requires_grad,
    ]


def test_func_jvp_matches_pytorch():
    got, expected = _jvps(vkml), _jvps(torch)
    for index, (a, b) in enumerate(zip(got, expected, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=str(index))
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        vkml.func.jvp(lambda v: v, [vkml.ones(2)], [vkml.ones(2)])
    with pytest.raises(RuntimeError, match="same python structure"):
        vkml.func.jvp(lambda v, w: v, (vkml.ones(2), vkml.ones(2)), (vkml.ones(2),))


@pytest.mark.parametrize("size, replicas, drop_last", [(7, 3, False), (7, 3, True), (2, 4, False)])
def test_distributed_sampler_splits_as_pytorch(size, replicas, drop_last):
    from torch.utils.data.distributed import DistributedSampler as Expected

    from vkml.utils.data.distributed import DistributedSampler

    for rank in range(replicas):
        options = dict(num_replicas=replicas, rank=rank, drop_last=drop_last)
        got = DistributedSampler(range(size), shuffle=False, **options)
        assert list(got) == list(Expected(range(size), shuffle=False, **options)) and len(got) == len(list(got))
    shares = [
        DistributedSampler(range(size), seed=3, **dict(num_replicas=replicas, rank=r, drop_last=drop_last))
        for r in range(replicas)
    ]
    drawn = [list(s) for s in shares]
    if drop_last:  # a shuffled epoch is a permutation cut into shares, or padded by repeating its start
        assert len(set(sum(drawn, []))) == len(sum(drawn, []))
    else:
        assert set(sum(drawn, [])) == set(range(size))
    assert drawn == [list(s) for s in shares]  # the same epoch, the same order
    for s in shares:
        s.set_epoch(1)
    assert size < 7 or [list(s) for s in shares] != drawn  # another epoch, another order


def test_distributed_sampler_errors_match_pytorch():
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        vkml.utils.data.DistributedSampler(range(3), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        vkml.utils.data.DistributedSampler(range(3))


@pytest.mark.parametrize("lib", [torch, vkml], ids=["torch", "vkml"])
def test_convert_conv_weight_memory_format(lib):
    lib.manual_seed(0)
    model = lib.nn.Sequential(
        lib.nn.Conv2d(2, 3, 3), lib.nn.Sequential(lib.nn.ConvTranspose2d(3, 2, 2)), lib.nn.Conv3d(2, 2, 2)
    )
    weight = model[0].weight
    assert lib.nn.utils.convert_conv2d_weight_memory_format(model, lib.channels_last) is model
    assert model[0].weight is weight  # the same Parameter, new data
    assert model[0].weight.is_contiguous(memory_format=lib.channels_last)
    assert model[1][0].weight.is_contiguous(memory_format=lib.channels_last)
    assert not model[2].weight.is_contiguous(memory_format=lib.channels_last_3d)
    lib.nn.utils.convert_conv3d_weight_memory_format(model, lib.channels_last_3d)
    assert model[2].weight.is_contiguous(memory_format=lib.channels_last_3d)


def _keyword_functions(lib, keywords: bool = True):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, factor=2.0):
            ctx.factor = factor
            return x * factor

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.factor, None

    class Shift(lib.autograd.Function):
        @staticmethod
        def forward(x, shift=1.0, scale=1.0):
            return (x + shift) * scale

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.count, ctx.scale = len(inputs), inputs[2]

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.scale, None, None

    x = lib.tensor([1.0, -2.0], requires_grad=True)
    if keywords:
        out = Scale.apply(x, factor=3.0) + Scale.apply(x) + Shift.apply(x, scale=0.5) + Shift.apply(x, 2.0, scale=4.0)
    else:  # the same calls, every argument given by position
        out = Scale.apply(x, 3.0) + Scale.apply(x) + Shift.apply(x, 1.0, 0.5) + Shift.apply(x, 2.0, 4.0)
    out.sum().backward()
    return out.tolist(), x.grad.tolist()


def test_function_apply_takes_keyword_arguments_as_pytorch():
    """Keywords bind as PyTorch binds them (its 2.13 apply takes them; older ones take positions only,
    so the oracle is PyTorch's positional call, and its keyword call where it has one)."""
    expected = _keyword_functions(torch, keywords=False)
    assert _keyword_functions(vkml) == expected == _keyword_functions(vkml, keywords=False)
    try:
        with_keywords = _keyword_functions(torch)
    except TypeError:  # a PyTorch before keyword arguments to apply
        return
    assert with_keywords == expected


def _inplace_relu(lib):
    class InplaceReLU(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.clamp_(min=0)
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            (out,) = ctx.saved_tensors
            return grad * (out > 0).to(grad.dtype)

    return InplaceReLU


def _dirty_session(lib):
    relu = _inplace_relu(lib)
    w = lib.tensor([[1.0, -2.0], [0.5, 1.5]], requires_grad=True)
    x = lib.tensor([[1.0, 2.0], [-1.0, 0.5]])
    h = x @ w
    early = h + 1  # recorded before the write: sees, and differentiates through, the old value
    out = relu.apply(h)
    loss = (out * lib.tensor([1.0, 2.0])).sum() + early.sum()
    loss.backward()
    with lib.no_grad():
        y = lib.tensor([-1.0, 2.0])
        relu.apply(y)
    return [out is h, h.tolist(), early.tolist(), w.grad.tolist(), y.tolist(), out.requires_grad]


def test_mark_dirty_rebases_the_written_input_as_pytorch():
    assert _dirty_session(vkml) == _dirty_session(torch)
    relu = _inplace_relu(vkml)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place operation"):
        relu.apply(vkml.tensor([1.0], requires_grad=True))

    class Forgets(vkml.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(RuntimeError, match="marked as dirty during the forward method were not returned"):
        Forgets.apply(vkml.tensor([1.0], requires_grad=True) * 1)


def _written_after_product(lib):
    w = lib.tensor([[1.0, -2.0], [0.5, 1.5]], requires_grad=True)
    h = lib.tensor([[1.0, 2.0], [-1.0, 0.5]]) @ w
    scaled, halved = h * 3, h / 2  # neither gradient with respect to h reads h itself
    h.add_(1)
    (scaled.sum() + halved.sum()).backward()
    return w.grad.tolist()


def test_product_by_a_constant_survives_a_later_write_as_pytorch():
    assert _written_after_product(vkml) == _written_after_product(torch)
    x = vkml.tensor([2.0], requires_grad=True) * 1
    y = vkml.tensor([3.0], requires_grad=True)
    product = x * y  # y's gradient reads x
    x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        product.backward()
