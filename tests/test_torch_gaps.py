"""PyTorch behaviours that program sweeps found vkml lacking, each checked against torch on CPU."""

from __future__ import annotations

import pytest
import torch

import vkml

_FAMILIES = (NotImplementedError, TypeError, ValueError, RuntimeError, Exception)


def _outcome(fn):
    """What a call gives: ("ok", shape, dtype name, values) or ("raise", the error's class name)."""
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001  (the class is what is compared)
        return ("raise", next(c.__name__ for c in _FAMILIES if isinstance(e, c)))
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
