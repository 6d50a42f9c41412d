"""PyTorch behaviours that program sweeps found vkml lacking, each checked against torch on CPU."""

from __future__ import annotations

import pytest
import torch

import vkml


class _Raised:
    """An outcome that raised: equal to another whose class it is an instance of, on either side (vkml's
    errors subclass PyTorch's builtin ones: a DTypeError is a TypeError and a RuntimeError)."""

    def __init__(self, error: Exception):
        self.cls = type(error)

    def __eq__(self, other) -> bool:
        if not isinstance(other, _Raised):
            return NotImplemented
        builtin = [c for c in (self.cls, other.cls) if c.__module__ == "builtins"]
        return bool(builtin) and all(issubclass(self.cls, b) and issubclass(other.cls, b) for b in builtin)

    def __repr__(self) -> str:
        return f"raised {self.cls.__name__}"


def _outcome(fn):
    """What a call gives: ("ok", shape, dtype name) or ("raise", what it raised)."""
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001  (the class is what is compared)
        return ("raise", _Raised(e))
    return ("ok", tuple(out.shape), str(out.dtype).split(".")[-1])


@pytest.mark.parametrize(
    "call",
    [
        "zeros()",
        "ones()",
        "empty()",
        "rand()",
        "randn()",
        "zeros(())",
        "ones([])",
        "empty(size=())",
        "randn(())",
        "rand([])",
        "zeros(size=[])",
        "full((), 3.0)",
    ],
)
def test_creation_without_size_is_a_type_error_as_torch(call):
    ours, theirs = _outcome(lambda: eval("vkml." + call)), _outcome(lambda: eval("torch." + call))
    assert ours == theirs


@pytest.mark.parametrize("data", [[[], [[]]], [[], [1]], [[[]], []], [[], []], [[1], [[]]]])
def test_tensor_of_nested_empty_lists_reads_shape_from_first_elements(data):
    ours, theirs = _outcome(lambda: vkml.tensor(data)), _outcome(lambda: torch.tensor(data))
    assert ours == theirs
    if theirs[0] == "ok":
        assert _outcome(lambda: vkml.tensor(data, dtype=vkml.int64)) == _outcome(
            lambda: torch.tensor(data, dtype=torch.int64)
        )


def test_cpu_namespace_matches_torch():
    import vkml.cpu.amp  # noqa: F401  (the submodule imports, as torch.cpu.amp does)

    for name in ("is_available", "is_initialized", "device_count", "current_device"):
        assert getattr(vkml.cpu, name)() == getattr(torch.cpu, name)()
    assert vkml.cpu.synchronize() is None and vkml.cpu.set_device("cpu") is None
    with pytest.warns(FutureWarning, match=r"torch\.cpu\.amp\.autocast\(args\.\.\.\)` is deprecated"):
        region = vkml.cpu.amp.autocast(dtype=vkml.float16)
    assert isinstance(region, vkml.autocast) and region.device_type == "cpu"
    with region:
        assert vkml.is_autocast_enabled("cpu") and not vkml.is_autocast_enabled("vulkan")
        assert (vkml.ones(2, 2) @ vkml.ones(2, 2)).dtype is vkml.float16
    assert not vkml.is_autocast_enabled("cpu")
    with pytest.warns(FutureWarning, match=r"torch\.cpu\.amp\.GradScaler\(args\.\.\.\)` is deprecated"):
        scaler = vkml.cpu.amp.GradScaler(init_scale=8.0)
    assert scaler.get_scale() == 8.0


def _inference_story(lib):
    """What a program sees of inference tensors: is_inference(), and which uses raise."""
    seen = []
    w = lib.ones(2, requires_grad=True)
    with lib.inference_mode():
        x = lib.ones(2)
        seen += [x.is_inference(), (w * 2).is_inference(), w.view(2).is_inference(), x.view(2).is_inference()]
        seen.append(_outcome(lambda: x.add_(1)))
    with lib.inference_mode(False):
        seen.append(lib.ones(2).is_inference())
    seen += [lib.ones(2).is_inference(), lib.is_inference(x), x[0].is_inference(), x.detach().is_inference()]
    seen += [(x * 3).is_inference(), x.clone().is_inference()]
    seen.append(_outcome(lambda: (w + x).sum().backward() or w))  # add saves neither operand
    for use in (
        lambda: (w * x).sum().backward(),
        lambda: lib.nn.functional.linear(x, w.unsqueeze(0)).sum().backward(),
        lambda: x.add_(1),
        lambda: x[0].fill_(3),
        lambda: x.requires_grad_(),
    ):
        with pytest.raises(RuntimeError) as info:
            use()
        seen.append(str(info.value)[:40])
    with lib.no_grad():
        seen.append(_outcome(lambda: x.mul_(2)))
    seen.append((x.clone() * w).sum().backward())  # a clone is a normal tensor
    return seen


def test_inference_tensors_are_marked_and_refused_as_torch():
    assert _inference_story(vkml) == _inference_story(torch)


def _compiled_story(lib):
    """What a program sees of compile(module): the wrapper's names, keys, forwarding and modes."""
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU())
    net.scale = 5
    fast = lib.compile(net)  # PyTorch traces on the first call only: nothing here calls it
    seen = [isinstance(fast, lib.nn.Module), type(fast).__name__, fast._orig_mod is net, fast.scale, len(fast)]
    seen += [list(fast.state_dict()), [n for n, _ in fast.named_parameters()], [n for n, _ in fast.named_modules()]]
    seen.append(next(fast.parameters()) is net[0].weight)
    fast.eval()
    seen += [fast.training, net.training]
    fast.train()
    fast.scale, fast.extra = 9, 1
    seen += [fast.training, net.training, net.scale, net.extra, repr(fast)]
    seen.append(_outcome(lambda: fast.load_state_dict(net.state_dict())))
    fast.load_state_dict(fast.state_dict())
    return seen


@pytest.mark.stress  # torch.compile's first use imports dynamo: ~10 s
def test_compile_returns_torchs_optimized_module_shape():
    assert _compiled_story(vkml) == _compiled_story(torch)


def test_compile_wraps_a_module_under_orig_mod():
    net = vkml.nn.Sequential(vkml.nn.Linear(2, 3), vkml.nn.ReLU())
    fast = vkml.compile(net)
    assert list(fast.state_dict()) == ["_orig_mod." + k for k in net.state_dict()]
    assert [n for n, _ in fast.named_modules()] == [
        "",
        *("_orig_mod" + ("." + n if n else "") for n, _ in net.named_modules()),
    ]
    fast.eval()
    assert not net.training and not fast.training and len(fast) == 2
    fast.load_state_dict(fast.state_dict())
    with pytest.raises(RuntimeError, match="Missing key"):  # PyTorch's: the keys lack the prefix
        fast.load_state_dict(net.state_dict())
    net, x = vkml.nn.Linear(2, 3), vkml.ones(1, 2)
    fast = vkml.compile(net)
    assert fast(x).tolist() == net(x).tolist()
    fast(x).sum().backward()
    assert net.weight.grad.tolist() == [[1.0, 1.0]] * 3


# Ops over bool tensors: what PyTorch computes (sign, square, bool ** bool) and which class it raises.
_BOOL_CALLS = (
    "sign(b)",
    "sgn(b)",
    "square(b)",
    "square(b[1:])",
    "pow(b, True)",
    "pow(b, False)",
    "pow(b, 2)",
    "pow(b, tensor(True))",
    "abs(b)",
    "neg(b)",
    "floor(b)",
    "fmod(b, c)",
    "remainder(b, True)",
    "floor_divide(b, c)",
    "hypot(b, c)",
    "clamp(b, False, True)",
    "nn.functional.relu(b)",
    "softmax(b, 0)",
    "trace(stack([b, c, b]))",
    "cross(b, c, dim=0)",
    "matmul(b, c)",
    "gcd(b, c)",
    "nextafter(b, c)",
)


def _bool_outcome(lib, call, device=None):
    b = lib.tensor([True, False, True], **({"device": device} if device else {}))
    c = lib.tensor([False, False, True], **({"device": device} if device else {}))
    names = {"b": b, "c": c, "nn": lib.nn, "tensor": lambda v: lib.tensor(v, device=b.device)}
    try:
        out = eval(call, {**vars(lib), **names})
    except Exception as e:  # noqa: BLE001  (the class is what is compared)
        return ("raise", _Raised(e))
    return ("ok", str(out.dtype).split(".")[-1], out.tolist())


@pytest.mark.parametrize("where", ["cpu", "gpu"])
def test_bool_operands_compute_or_raise_as_torch(where, request):
    device = request.getfixturevalue("gpu") if where == "gpu" else vkml.device("cpu")
    for call in _BOOL_CALLS:
        assert _bool_outcome(vkml, call, device) == _bool_outcome(torch, call), call
    b = vkml.tensor([True, False, True], device=device)
    assert b.clone().sign_().tolist() == [True, False, True] and b.clone().pow_(False).tolist() == [True] * 3
    with pytest.raises(RuntimeError):  # PyTorch's: the int64 square cannot be written into a bool tensor
        b.clone().square_()


# A float16 tensor's op with a Python scalar: PyTorch's CPU converts the scalar to float16 first,
# except a product's scalar and a divisor (read in float32); ``s / h`` is ``h.reciprocal() * s``.
_F16_OPS = {
    "add": lambda a, s: a + s,
    "rsub": lambda a, s: s - a,
    "rmul": lambda a, s: s * a,
    "div": lambda a, s: a / s,
    "rdiv": lambda a, s: s / a,
    "rpow": lambda a, s: s**a,
    "floordiv": lambda a, s: a // s,
    "rfloordiv": lambda a, s: s // a,
    "rem": lambda a, s: a % s,
    "eq": lambda a, s: a == s,
}
_F16_SCALARS = (1e10, 7e4, 65520.0, 1e-8, 3e-5)


@pytest.mark.parametrize("where", ["cpu", "gpu"])
def test_python_scalars_meet_float16_as_in_torch(where, request):
    import numpy as np

    device = request.getfixturevalue("gpu") if where == "gpu" else vkml.device("cpu")
    values = np.array([0.5, 1.0, -3.0, 2.0, 0.0, 1000.0, -0.25, 3.1406, -7.5e-5, 60000.0], np.float16)
    ours, theirs = vkml.tensor(values, device=device), torch.tensor(values)
    for name, op in _F16_OPS.items():
        for s in _F16_SCALARS:  # one kernel per op: the scalar is its parameter
            got, expected = op(ours, s).float().numpy(), op(theirs, s).float().numpy()
            assert np.array_equal(got, expected, equal_nan=True), (name, s)
    with pytest.raises(RuntimeError, match="cannot be converted"):  # PyTorch's: the exponent does not fit
        ours**7e4


@pytest.mark.parametrize("where", ["cpu", "gpu"])
def test_poisson_samples_match_the_rates_and_every_device(where, request):
    import numpy as np

    device = request.getfixturevalue("gpu") if where == "gpu" else vkml.device("cpu")
    rates = np.repeat(np.array([0.0, 0.3, 4.0, 60.0, 2500.0], np.float32), 2000)
    vkml.manual_seed(7)
    on_device = vkml.poisson(vkml.tensor(rates, device=device))
    vkml.manual_seed(7)
    on_cpu = vkml.poisson(vkml.tensor(rates))
    assert on_device.device is device and on_device.dtype is vkml.float32
    counts = on_device.numpy()
    assert np.array_equal(counts, on_cpu.numpy())  # the same bits: the draws are, and the host samples them
    for rate, group in zip(rates[::2000], counts.reshape(5, 2000)):
        assert (group == np.round(group)).all() and (group >= 0).all()
        n = len(group)  # mean within 5 standard errors, variance (= the rate) within 5 of its own
        assert abs(group.mean() - rate) <= 5 * np.sqrt(rate / n)
        assert abs(group.var() - rate) <= 5 * np.sqrt((2 * rate**2 + rate) / n)
    r = vkml.tensor([0.5, 3.0], requires_grad=True)
    vkml.poisson(r).sum().backward()  # PyTorch's gradient: zero
    assert r.grad.tolist() == torch.zeros(2).tolist() and vkml.poisson(r).grad_fn.name() == "PoissonBackward0"
    for bad in ([-1.0], [float("nan")], [1, 2]):
        assert _outcome(lambda b=bad: vkml.poisson(vkml.tensor(b))) == _outcome(
            lambda b=bad: torch.poisson(torch.tensor(b))
        )
    assert vkml.poisson(vkml.tensor([2.0], dtype=vkml.float16)).dtype is vkml.float16


@pytest.mark.parametrize(
    "call",
    [
        "new_zeros()",
        "new_ones()",
        "new_empty()",
        "new_empty(())",
        "new_zeros([])",
        "new_zeros(size=(3,))",
        "sum_to_size()",
    ],
)
def test_new_tensor_methods_take_sizes_as_torch(call):
    assert _outcome(lambda: eval("vkml.ones(2)." + call)) == _outcome(lambda: eval("torch.ones(2)." + call))
