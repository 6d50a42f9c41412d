"""Mixed precision: vkml.autocast's op lists and casts, and GradScaler against torch.amp.GradScaler."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml
import vkml.nn as nn
import vkml.nn.functional as F

CPU = vkml.device("cpu")
RNG = np.random.default_rng(5)
X = RNG.standard_normal((6, 4)).astype(np.float32)
W = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal(3).astype(np.float32)

# (call, dtype under autocast for float32 inputs, dtype for float16 inputs): PyTorch's CUDA lists
H, S = vkml.float16, vkml.float32
OPS = {
    "matmul": (lambda x, w: vkml.matmul(x, w.t()), H, H),
    "@": (lambda x, w: x @ w.t(), H, H),
    "mm": (lambda x, w: vkml.mm(x, w.t()), H, H),
    "Tensor.mm": (lambda x, w: x.mm(w.t()), H, H),
    "bmm": (lambda x, w: vkml.bmm(x[None], w.t()[None]), H, H),
    "addmm": (lambda x, w: vkml.addmm(vkml.zeros(6, 3, device=x.device), x, w.t()), H, H),
    "linear": (lambda x, w: F.linear(x, w), H, H),
    "einsum": (lambda x, w: vkml.einsum("ij,kj->ik", x, w), H, H),
    "softmax": (lambda x, w: x.softmax(-1), S, S),
    "log_softmax": (lambda x, w: F.log_softmax(x, -1), S, S),
    "sum": (lambda x, w: x.sum(), S, S),
    "sum(dtype=float16)": (lambda x, w: x.sum(dtype=vkml.float16), H, H),
    "cumsum": (lambda x, w: vkml.cumsum(x, 0), S, S),
    "exp": (lambda x, w: x.exp(), S, S),
    "pow": (lambda x, w: x**2, S, S),
    "rtruediv": (lambda x, w: 1.0 / x, S, S),
    "softmin": (lambda x, w: F.softmin(x, -1), S, S),
    "layer_norm": (lambda x, w: F.layer_norm(x, (4,)), S, S),
    "mse_loss": (lambda x, w: F.mse_loss(x, x * 0.5), S, S),
    "cross_entropy": (lambda x, w: F.cross_entropy(x, vkml.tensor([0, 1, 2, 3, 0, 1], device=x.device)), S, S),
    "mean (unlisted)": (lambda x, w: x.mean(), S, H),
    "relu (unlisted)": (lambda x, w: F.relu(x), S, H),
    "add (unlisted)": (lambda x, w: x + 1.0, S, H),
}


def test_vulkan_autocast_gives_each_op_its_cuda_listed_dtype(gpu):
    """The dtypes are known when the ops are recorded: nothing runs (no kernel compiles)."""
    x, w = vkml.tensor(X, device=gpu), vkml.tensor(W, device=gpu)
    for name, (call, for_float32, for_float16) in OPS.items():
        with vkml.autocast(device_type="cuda", dtype=vkml.float16):
            assert call(x, w).dtype is for_float32, name
            assert call(x.half(), w.half()).dtype is for_float16, name
            with vkml.autocast("cpu", dtype=vkml.float16):  # the CPU lists do not apply to a Vulkan tensor
                assert call(x, w).dtype is for_float32, name
        if "dtype=" not in name:
            assert call(x, w).dtype is vkml.float32, name  # outside: nothing changes
    with vkml.autocast("cuda"), pytest.raises(RuntimeError, match="unsafe to autocast"):
        F.binary_cross_entropy(vkml.sigmoid(x), vkml.ones(6, 4, device=gpu))


# name -> f(namespace, functional, x, w) for x (6, 4), w (3, 4): PyTorch's CPU lists, and ops on none
CPU_OPS = {
    "matmul": lambda m, F, x, w: m.matmul(x, w.t()),
    "@": lambda m, F, x, w: x @ w.t(),
    "Tensor.mm": lambda m, F, x, w: x.mm(w.t()),
    "bmm": lambda m, F, x, w: m.bmm(x[None], w.t()[None]),
    "addmm": lambda m, F, x, w: m.addmm(x[:3, :3], x[:3], w.t()),
    "addmv": lambda m, F, x, w: m.addmv(x[:, 0], x, w[0]),
    "mv": lambda m, F, x, w: m.mv(x, w[0]),
    "linear": lambda m, F, x, w: F.linear(x, w),
    "einsum": lambda m, F, x, w: m.einsum("ij,kj->ik", x, w),
    "tensordot": lambda m, F, x, w: m.tensordot(x, w.t(), 1),
    "conv1d": lambda m, F, x, w: F.conv1d(x[None], w[:, :1, None].expand(3, 6, 1).contiguous()),
    "softmax": lambda m, F, x, w: x.softmax(-1),
    "log_softmax": lambda m, F, x, w: F.log_softmax(x, -1),
    "sum": lambda m, F, x, w: x.sum(),
    "prod": lambda m, F, x, w: x.prod(),
    "cumsum": lambda m, F, x, w: m.cumsum(x, 0),
    "exp": lambda m, F, x, w: x.exp(),
    "pow": lambda m, F, x, w: x**2,
    "rtruediv": lambda m, F, x, w: 1.0 / x,
    "layer_norm": lambda m, F, x, w: F.layer_norm(x, (4,)),
    "logsumexp": lambda m, F, x, w: x.logsumexp(0),
    "mse_loss": lambda m, F, x, w: F.mse_loss(x, x * 0.5),
    "l1_loss": lambda m, F, x, w: F.l1_loss(x, x * 0.5),
    "cross_entropy": lambda m, F, x, w: F.cross_entropy(x, m.tensor([0, 1, 2, 3, 0, 1])),
    "binary_cross_entropy": lambda m, F, x, w: F.binary_cross_entropy(m.sigmoid(x), m.sigmoid(x * 2)),
    "cdist": lambda m, F, x, w: m.cdist(x, w),
    "trace": lambda m, F, x, w: m.trace(x),
    "max_pool3d": lambda m, F, x, w: F.max_pool3d(x.reshape(1, 1, 2, 3, 4), 2),
    "max_pool2d": lambda m, F, x, w: F.max_pool2d(x[None], 2),
    "pad reflect": lambda m, F, x, w: F.pad(x[None], (1, 1), mode="reflect"),
    "pad constant": lambda m, F, x, w: F.pad(x[None], (1, 1)),
    "relu": lambda m, F, x, w: F.relu(x),
    "cat": lambda m, F, x, w: m.cat([x, w.float()]),
}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_cpu_autocast_gives_pytorchs_cpu_dtypes(dtype):
    for name, call in CPU_OPS.items():
        for inputs in ("float32", dtype):
            x, w = (vkml.tensor(a).to(getattr(vkml, inputs)) for a in (X, W))
            xt, wt = (torch.tensor(a).to(getattr(torch, inputs)) for a in (X, W))
            with vkml.autocast("cpu", dtype=getattr(vkml, dtype)):
                got = call(vkml, F, x, w).dtype
            with torch.autocast("cpu", dtype=getattr(torch, dtype)):
                want = call(torch, torch.nn.functional, xt, wt).dtype
            assert str(got) == str(want).replace("torch.", "vkml."), (name, inputs)


def test_ops_inside_a_listed_or_unlisted_op_do_not_autocast():
    x = vkml.tensor(X).half()
    with vkml.autocast("cpu", dtype=vkml.float16):
        gelu = F.gelu(x)  # built of exp/tanh-like pieces: still float16, as PyTorch's kernel
        ce = F.cross_entropy(vkml.tensor(X), vkml.tensor([0, 1, 2, 3, 0, 1]))
    assert gelu.dtype is vkml.float16
    want = F.cross_entropy(vkml.tensor(X), vkml.tensor([0, 1, 2, 3, 0, 1]))
    assert_same_bits(ce.numpy(), want.numpy(), "cross_entropy of float32 inputs is unchanged")


def test_linear_values_are_float16_math_and_gradients_reach_float32_leaves():
    x, w, b = vkml.tensor(X), vkml.tensor(W, requires_grad=True), vkml.tensor(B, requires_grad=True)
    xt, wt, bt = torch.tensor(X), torch.tensor(W, requires_grad=True), torch.tensor(B, requires_grad=True)
    with vkml.autocast("cpu", dtype=vkml.float16):
        y = F.linear(x, w, b)
        loss = F.cross_entropy(y, vkml.tensor([0, 1, 2, 0, 1, 2]))
    loss.backward()
    yt = torch.nn.functional.linear(xt.half(), wt.half(), bt.half())  # CUDA autocast's casts, by hand
    loss_t = torch.nn.functional.cross_entropy(yt.float(), torch.tensor([0, 1, 2, 0, 1, 2]))
    loss_t.backward()
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(loss.item(), loss_t.item(), rtol=1e-3)
    assert w.grad.dtype is vkml.float32 and b.grad.dtype is vkml.float32
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-2, atol=1e-3)
    np.testing.assert_allclose(b.grad.numpy(), bt.grad.numpy(), rtol=1e-2, atol=1e-3)


def test_weights_are_cast_once_per_region():
    lin = nn.Linear(4, 3)
    x = vkml.tensor(X)
    with vkml.autocast("cpu", dtype=vkml.float16):
        first, second = F.linear(x, lin.weight), F.linear(x, lin.weight)
        assert _cast_weight(first) is _cast_weight(second)  # one float16 copy of the weight
    with vkml.autocast("cpu", cache_enabled=False):
        assert _cast_weight(F.linear(x, lin.weight)) is not _cast_weight(F.linear(x, lin.weight))
    with vkml.autocast("cpu", dtype=vkml.float16):
        assert _cast_weight(F.linear(x, lin.weight)) is not _cast_weight(first)  # a new region casts again


def _cast_weight(linear_out):
    """The float16 weight a linear's result was computed from (linear is matmul(x, weight.t()))."""
    transposed = linear_out.grad_fn.parents[1]
    return transposed.grad_fn.parents[0]


def test_autocast_arguments_nesting_and_decorator():
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        vkml.autocast("tpu")
    with pytest.warns(UserWarning, match="Disabling autocast"):
        disabled = vkml.autocast("cpu", dtype=vkml.float32)
    x, w = vkml.tensor(X), vkml.tensor(W)
    with disabled:
        assert (x @ w.t()).dtype is vkml.float32 and not vkml.is_autocast_enabled("cpu")
    with vkml.autocast("vulkan"):
        assert (x @ w.t()).dtype is vkml.float32  # CPU tensors: autocast is on for vulkan only
        assert vkml.is_autocast_enabled("vulkan") and vkml.get_autocast_dtype("vulkan") is vkml.float16
    with vkml.amp.autocast("cpu", dtype=vkml.float16):
        assert vkml.is_autocast_enabled("cpu")
        with vkml.autocast("cpu", enabled=False):
            assert (x @ w.t()).dtype is vkml.float32
        assert (x @ w.t()).dtype is vkml.float16

    @vkml.autocast("cpu", dtype=vkml.float16)
    def forward(a, b):
        return a @ b.t()

    assert forward(x, w).dtype is vkml.float16 and not vkml.is_autocast_enabled("cpu")


def _train_with_scaler(framework, steps, inf_at, device=None):
    """SGD on a quadratic under a GradScaler; the loss is multiplied by inf at the steps in ``inf_at``."""
    start = np.linspace(-1, 1, 5).astype(np.float32)
    if framework is torch:
        w = torch.tensor(start, requires_grad=True)
        opt, scaler = torch.optim.SGD([w], lr=0.1), torch.amp.GradScaler("cpu", init_scale=256.0, growth_interval=3)
    else:
        w = nn.Parameter(vkml.tensor(start, device=device))
        opt = vkml.optim.SGD([w], lr=0.1)
        scaler = vkml.amp.GradScaler("cpu", init_scale=256.0, growth_interval=3)
    history = []
    for step in range(steps):
        opt.zero_grad()
        loss = (w * w).sum() * (float("inf") if step in inf_at else 1.0)
        scaler.scale(loss).backward()
        if step % 2:
            scaler.unscale_(opt)  # as before gradient clipping
        result = scaler.step(opt)
        scaler.update()
        history.append((scaler.get_scale(), result is None))
    values = w.detach().numpy() if framework is torch else w.numpy()
    return history, values, scaler.state_dict()


def test_grad_scaler_matches_torch():
    want = _train_with_scaler(torch, 10, {2, 7})
    got = _train_with_scaler(vkml, 10, {2, 7})
    assert got[0] == want[0]  # scales after each update, and which steps were skipped
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    assert got[2] == want[2]


def test_grad_scaler_same_bits_on_vulkan(gpu):
    cpu = _train_with_scaler(vkml, 6, {2}, CPU)
    dev = _train_with_scaler(vkml, 6, {2}, gpu)
    assert dev[0] == cpu[0]
    assert_same_bits(dev[1], cpu[1], "parameters")


def test_grad_scaler_errors_and_state_dict():
    w = nn.Parameter(vkml.ones(2))
    opt = vkml.optim.SGD([w], lr=0.1)
    scaler = vkml.amp.GradScaler("cpu")
    with pytest.raises(AssertionError, match="did not use scaler.scale"):
        scaler.step(opt)
    scaler.scale((w * w).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called on this optimizer"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: None)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step"):
        scaler.unscale_(opt)
    scaler.update(new_scale=8.0)
    assert scaler.get_scale() == 8.0
    half = nn.Parameter(vkml.ones(2, dtype=vkml.float16))
    opt16 = vkml.optim.SGD([w, half], lr=0.1)
    opt16.zero_grad()
    scaler.scale((w * w).sum() + (half * half).sum().float()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.unscale_(opt16)
    assert w.grad.tolist() == (2 * w * 8.0).tolist()  # the float32 gradient listed before it stays scaled too
    fresh = vkml.amp.GradScaler("cpu")
    fresh.load_state_dict(scaler.state_dict())
    assert fresh.state_dict() == scaler.state_dict()
    off = vkml.amp.GradScaler("cpu", enabled=False)
    loss = (w * w).sum()
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    with pytest.raises(AssertionError, match="growth factor must be > 1.0"):
        vkml.amp.GradScaler("cpu", growth_factor=1.0)


@pytest.mark.parametrize("dtype", [vkml.float16, vkml.bfloat16], ids=str)
def test_autocast_training_step_same_bits_on_vulkan(gpu, dtype):
    def run(device):
        vkml.manual_seed(0)
        net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
        opt = vkml.optim.SGD(net.parameters(), lr=0.1)
        scaler = vkml.amp.GradScaler(device.kind)
        x, y = vkml.tensor(X, device=device), vkml.tensor([0, 1, 2, 0, 1, 2], device=device)
        for _ in range(2):
            opt.zero_grad()
            with vkml.autocast(device.kind, dtype=dtype):
                loss = F.cross_entropy(net(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        return loss.numpy(), net[0].weight.numpy()

    for got, want in zip(run(gpu), run(CPU)):
        assert_same_bits(got, want, "autocast step")


class _Scale(vkml.autograd.Function):
    """x @ w, with the dtypes its forward and backward saw recorded on the class."""

    seen: list = []

    @staticmethod
    @vkml.amp.custom_fwd(device_type="cpu")
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        out = x @ w
        _Scale.seen.append(("forward", out.dtype))
        return out

    @staticmethod
    @vkml.amp.custom_bwd(device_type="cpu")
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gx = g @ w.t()
        _Scale.seen.append(("backward", gx.dtype))
        return gx, x.t() @ g


class _CastScale(_Scale):
    @staticmethod
    @vkml.amp.custom_fwd(device_type="cpu", cast_inputs=vkml.float32)
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        out = x @ w
        _Scale.seen.append(("forward", out.dtype))
        return out


def test_custom_fwd_and_bwd_keep_the_forward_autocast_state_in_backward():
    x = vkml.tensor(X, requires_grad=True)
    w = vkml.tensor(W.T.copy(), requires_grad=True)
    _Scale.seen.clear()
    with vkml.autocast("cpu", dtype=vkml.float16):
        out = _Scale.apply(x, w)
    out.float().sum().backward()  # outside the region: custom_bwd re-enters the forward's autocast
    assert _Scale.seen == [("forward", vkml.float16), ("backward", vkml.float16)]
    assert x.grad.dtype is vkml.float32
    _Scale.seen.clear()
    with vkml.autocast("cpu", dtype=vkml.float16):
        out = _CastScale.apply(x.half(), w)
    out.sum().backward()
    assert _Scale.seen == [("forward", vkml.float32), ("backward", vkml.float32)]


def test_every_public_function_and_method_is_seen_by_autocast():
    """amp.install wraps what exists when it runs: its block must stay last in vkml/__init__.py."""
    import inspect

    own = {"is_autocast_enabled", "get_autocast_dtype", *vkml.amp.STATE_FUNCTIONS}
    missed = [
        name
        for name in vkml.__all__
        if name not in own
        and not name.startswith("_")  # _foreach_*: PyTorch's autocast has no rule for them either
        and inspect.isfunction(getattr(vkml, name, None))
        and not getattr(getattr(vkml, name), "__wrapped_by_autocast__", False)
    ]
    missed += [
        f"Tensor.{name}"
        for name, fn in vars(vkml.Tensor).items()
        if inspect.isfunction(fn)
        and not name.startswith("_")
        and not getattr(fn, "__wrapped_by_autocast__", False)
        and name not in vkml.frontend.amp._UNWRAPPED_METHODS  # realize(): records no op
    ]
    assert not missed, missed
    assert vkml.frontend.amp._UNWRAPPED_METHODS == {"realize"}  # a method added there must record no op


def test_cuda_names_the_vulkan_device_type(gpu):
    """``autocast("cuda")``, ``GradScaler("cuda")`` and the older ``torch.cuda.amp`` spellings, as
    AMP training scripts write them, run on the Vulkan device (vkml.device("cuda") is one)."""
    import warnings

    x = vkml.ones(2, 2, device=gpu)
    with vkml.autocast(device_type="cuda", dtype=vkml.float16):
        assert vkml.amp.is_autocast_enabled("cuda") and (x @ x).dtype is vkml.float16
    assert vkml.amp.GradScaler("cuda").is_enabled()
    with pytest.warns(FutureWarning, match="deprecated"):
        old = vkml.cuda.amp.autocast()
    with old:
        assert (x @ x).dtype is vkml.float16
    assert (x @ x).dtype is vkml.float32
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        scaler = vkml.cuda.amp.GradScaler(init_scale=8.0)
    assert scaler.get_scale() == 8.0
    import vkml.cuda.amp as cuda_amp

    assert cuda_amp.GradScaler is vkml.cuda.amp.GradScaler


def test_bfloat16_autocast_and_the_cpu_default_match_pytorch():
    """PyTorch's CPU autocast defaults to bfloat16 and runs it (it used to warn and turn off here);
    float64 arguments are not autocast; the float32 list takes bfloat16 arguments up to float32."""
    assert vkml.get_autocast_dtype("cpu") is vkml.bfloat16 and torch.get_autocast_dtype("cpu") is torch.bfloat16
    assert vkml.get_autocast_dtype("cuda") is vkml.float16
    x, w, b = vkml.tensor(X), vkml.tensor(W, requires_grad=True), vkml.tensor(B, requires_grad=True)
    xt, wt, bt = torch.tensor(X), torch.tensor(W, requires_grad=True), torch.tensor(B, requires_grad=True)
    target = [0, 1, 2, 0, 1, 2]
    with vkml.autocast("cpu"):
        assert vkml.is_autocast_enabled("cpu")
        y = F.linear(x, w, b)
        loss = F.cross_entropy(y, vkml.tensor(target))
        double = vkml.tensor(X, dtype=vkml.float64) @ vkml.tensor(W, dtype=vkml.float64).t()
    with torch.autocast("cpu"):
        yt = torch.nn.functional.linear(xt, wt, bt)
        loss_t = torch.nn.functional.cross_entropy(yt, torch.tensor(target))
    loss.backward()
    loss_t.backward()
    assert (y.dtype, loss.dtype, double.dtype) == (vkml.bfloat16, vkml.float32, vkml.float64)
    np.testing.assert_allclose(y.float().numpy(), yt.float().detach().numpy(), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(loss.item(), loss_t.item(), rtol=1e-3)
    assert w.grad.dtype is vkml.float32
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=2e-2, atol=2e-3)


def _state_functions(lib):
    """torch's autocast state functions in one sequence; the state is put back at the end."""
    seen = []
    a = lib.ones(2, 2)
    try:
        with pytest.warns(DeprecationWarning, match="is deprecated"):
            seen += [
                lib.is_autocast_cpu_enabled(),
                str(lib.get_autocast_cpu_dtype()),
                str(lib.get_autocast_gpu_dtype()),
            ]
        lib.set_autocast_enabled("cpu", True)
        seen += [lib.is_autocast_enabled("cpu"), str(lib.get_autocast_dtype("cpu")), str((a @ a).dtype)]
        lib.set_autocast_dtype("cpu", lib.float16)
        seen += [str(lib.get_autocast_dtype("cpu")), str((a @ a).dtype)]
        lib.set_autocast_enabled("cpu", False)
        seen += [str((a @ a).dtype), str(lib.get_autocast_dtype("cpu"))]
        with lib.autocast("cpu"):  # dtype=None: the one set_autocast_dtype chose
            seen += [str((a @ a).dtype)]
        with lib.autocast("cpu", dtype=lib.bfloat16):
            seen += [str(lib.get_autocast_dtype("cpu"))]
        seen += [str(lib.get_autocast_dtype("cpu")), lib.is_autocast_cache_enabled()]
        lib.set_autocast_cache_enabled(False)
        lib.clear_autocast_cache()
        seen += [lib.is_autocast_cache_enabled(), lib.amp.is_autocast_available("cpu")]
        seen += [lib.amp.is_autocast_available("cuda"), lib.amp.is_autocast_available("meta")]
    finally:
        lib.set_autocast_enabled("cpu", False)
        lib.set_autocast_dtype("cpu", lib.bfloat16)
        lib.set_autocast_cache_enabled(True)
    return [str(v).replace("torch.", "").replace("vkml.", "") for v in seen]


def test_autocast_state_functions_match_torch():
    assert _state_functions(vkml) == _state_functions(torch)
    assert not vkml.is_autocast_enabled("cpu") and vkml.get_autocast_dtype("cpu") is vkml.bfloat16
