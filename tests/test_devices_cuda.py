"""PyTorch's device idioms on vkml (docs/devices.md): ``"cuda"`` names best_device()'s Vulkan device and
``"cuda:N"`` Vulkan device N; ``vkml.cuda``, ``vkml.backends``, matmul precision, determinism and
``vkml.compile`` answer as PyTorch's do; best_device() warns about a Vulkan device that fails to open."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import vkml
import vkml.nn as nn
from vkml.errors import DeviceError
from vkml.frontend import devices

CPU = vkml.device("cpu")


def test_cuda_names_the_best_vulkan_device(gpu):
    assert vkml.device("cuda") is gpu is vkml.best_device()
    assert vkml.device(f"cuda:{gpu.index}") is vkml.device(f"vulkan:{gpu.index}") is gpu
    assert vkml.device("cuda", gpu.index) is gpu and vkml.device(gpu.index) is gpu
    assert (gpu.type, gpu.index, CPU.type, CPU.index) == ("vulkan", gpu.index, "cpu", None)
    assert isinstance(gpu, vkml.device) and isinstance(CPU, vkml.device) and not isinstance("cuda", vkml.device)
    assert vkml.device(gpu) is gpu


def test_the_pytorch_device_idiom_runs_on_the_gpu(gpu):
    device = "cuda" if vkml.cuda.is_available() else "cpu"
    x = vkml.tensor([1.0, 2.0]).to(device)
    assert x.device is gpu and x.is_cuda and not x.is_cpu and x.get_device() == gpu.index
    model = nn.Linear(2, 1).to(device)
    assert model.weight.device is gpu
    assert nn.Linear(2, 1).cuda().weight.device is gpu
    y = vkml.zeros(2, device=device) + x.cuda()
    back = y.cpu()
    assert back.device is CPU and not back.is_cuda and back.get_device() == -1 and back.tolist() == [1.0, 2.0]


def test_pin_memory_then_to_cuda_as_programs_write_it(gpu, monkeypatch):
    x = vkml.tensor([1, 2, 3])
    pinned = x.pin_memory()
    # PyTorch's: a pinned copy (a write to it does not reach x), pinned once
    assert pinned is not x and pinned.is_pinned() and not x.is_pinned() and pinned.pin_memory() is pinned
    assert pinned[1:].is_pinned() and pinned.device is x.device
    pinned[0] = 7
    assert x.tolist() == [1, 2, 3] and pinned.tolist() == [7, 2, 3]
    pinned[0] = 1
    monkeypatch.setattr(devices, "vulkan_device_reports", lambda: [])  # PyTorch without an accelerator
    assert not vkml.cuda.is_available()
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
        x.pin_memory()
    monkeypatch.undo()
    moved = pinned.to("cuda", non_blocking=True)
    assert moved.device is gpu and moved.tolist() == [1, 2, 3]
    with pytest.raises(RuntimeError, match=r"cannot pin a tensor on vulkan:\d"):
        moved.pin_memory()


def test_tensor_to_takes_every_pytorch_form(gpu):
    x, px = vkml.tensor([1.5, -2.5]), torch.tensor([1.5, -2.5])
    assert x.to("cuda", vkml.int64).tolist() == px.to("cpu", torch.int64).tolist()
    assert x.to(device="cuda", dtype=vkml.int32).device is gpu
    assert x.to(vkml.zeros(1, dtype=vkml.int64, device=gpu)).device is gpu
    assert x.to("cpu") is x and x.to(vkml.float32) is x  # torch returns self too
    assert x.to("cpu", copy=True) is not x and x.to(vkml.float32, False, True) is not x
    assert x.to("cuda", non_blocking=True).device is gpu
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        x.to("cpu", foo=1)


def test_cuda_namespace_answers_for_vulkan(gpu):
    reports = vkml.vulkan_device_reports()
    assert vkml.cuda.is_available() and vkml.cuda.device_count() == len(reports)
    assert vkml.cuda.current_device() == gpu.index
    assert vkml.cuda.get_device_name() == reports[gpu.index]["name"] == vkml.cuda.get_device_name(gpu.index)
    assert vkml.cuda.get_device_capability()[0] >= 1
    assert (
        vkml.cuda.is_bf16_supported() is reports[gpu.index]["features"]["storage_buffer_16bit"] is True
    )  # lavapipe has it
    x = vkml.ones(1024, device="cuda") * 2
    x.realize()
    vkml.cuda.synchronize()
    assert vkml.cuda.memory_allocated() >= 4096 and vkml.cuda.max_memory_allocated() >= 4096
    del x
    vkml.cuda.empty_cache()
    assert vkml.cuda.memory_reserved() >= vkml.cuda.memory_allocated()
    vkml.cuda.manual_seed(3)
    a = vkml.rand(4, device="cuda")
    vkml.cuda.manual_seed_all(3)
    b = vkml.rand(4)  # one generator for every device: the same draws on the CPU
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(ValueError, match="Expected a cuda device"):
        vkml.cuda.synchronize("cpu")


def test_empty_cache_returns_unused_blocks(gpu):
    x = vkml.ones(1 << 20, device=gpu) + 1  # a 4 MiB buffer
    x.realize()
    del x
    gpu.memory_stats()  # finalizers queue their releases; stats returns them
    gpu.empty_cache()
    assert gpu.memory_stats()["reserved_bytes"] <= gpu.memory.block_size
    assert (vkml.ones(3, device=gpu) * 2).tolist() == [2.0, 2.0, 2.0]  # the device still works


def test_without_vulkan_cuda_is_unavailable_and_cuda_raises(monkeypatch):
    monkeypatch.setattr(devices, "vulkan_device_reports", lambda: [])
    monkeypatch.setattr(devices.vulkan_instance, "unavailable_reason", lambda: "no driver")
    monkeypatch.setattr(devices.vulkan_instance, "loader_present", lambda: False)
    monkeypatch.setattr(devices, "_warned", set())
    monkeypatch.setattr(devices, "_best", None)
    assert not vkml.cuda.is_available() and vkml.cuda.device_count() == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no Vulkan at all: the CPU, silently, as PyTorch without CUDA
        assert vkml.best_device() is CPU
    with pytest.raises(DeviceError, match=r"'cuda': no Vulkan device is available \(no driver\)"):
        vkml.device("cuda")
    assert vkml.tensor([1.0]).to("cuda" if vkml.cuda.is_available() else "cpu").device is CPU
    monkeypatch.setattr(devices.vulkan_instance, "loader_present", lambda: True)
    with pytest.warns(RuntimeWarning, match=r"Vulkan loader is installed but Vulkan failed to start \(no driver\)"):
        assert vkml.best_device() is CPU


def test_best_device_warns_once_about_a_device_that_fails_to_open(monkeypatch, gpu):
    def refuse(index):
        raise DeviceError("vkCreateDevice failed: VK_ERROR_INITIALIZATION_FAILED")

    monkeypatch.setattr(devices, "_warned", set())
    monkeypatch.setattr(devices, "_best", None)
    monkeypatch.setattr(devices.vulkan_runtime, "device", refuse)
    with pytest.warns(RuntimeWarning, match=r"vulkan:\d \(.*\) failed to open: DeviceError: vkCreateDevice failed"):
        assert vkml.best_device() is CPU
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert vkml.best_device() is CPU  # once per reason
    with pytest.raises(DeviceError, match="no Vulkan device is available"):
        vkml.device("cuda")


def test_best_device_warns_about_an_unusable_device(monkeypatch, gpu):
    broken = {"index": 1, "name": "broken", "device_type": "discrete_gpu", "usable": False, "error": "bad ICD"}
    # The real device ranked below the broken one (a CPU driver), so best_device tries the broken first.
    real = [dict(r, device_type="cpu") for r in devices.vulkan_device_reports()]
    monkeypatch.setattr(devices, "_warned", set())
    monkeypatch.setattr(devices, "_best", None)
    monkeypatch.setattr(devices, "vulkan_device_reports", lambda: [*real, broken])
    with pytest.warns(RuntimeWarning, match=r"vulkan:1 \(broken\) cannot be used: bad ICD"):
        assert vkml.best_device() is gpu


def test_unknown_device_names_raise():
    for name in ("tpu", "cuda:x", "vulkan:-1"):
        with pytest.raises(DeviceError, match="unknown device"):
            vkml.device(name)
    with pytest.raises(DeviceError, match="must not include an index"):
        vkml.device("cuda:0", 0)
    with pytest.raises(DeviceError, match="no Vulkan device 99"):
        vkml.device("cuda:99")


def test_backends_switches_are_accepted():
    import vkml.backends.cudnn  # noqa: F401 - PyTorch programs import it so

    for flag in ("benchmark", "deterministic"):
        assert getattr(vkml.backends.cudnn, flag) is getattr(torch.backends.cudnn, flag) is False
        setattr(vkml.backends.cudnn, flag, True)
        assert getattr(vkml.backends.cudnn, flag) is True
        setattr(vkml.backends.cudnn, flag, False)
    assert vkml.backends.mps.is_available() is False and vkml.backends.mps.is_built() is False
    with pytest.raises(AttributeError):
        vkml.backends.cudnn.no_such_switch  # noqa: B018 - reading an unknown switch raises


def test_matmul_precision_is_recorded_and_validated():
    assert vkml.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "highest"
    try:
        vkml.set_float32_matmul_precision("high")
        assert vkml.get_float32_matmul_precision() == "high" and vkml.backends.cuda.matmul.allow_tf32
        with pytest.warns(UserWarning, match="bogus is not one of"):
            vkml.set_float32_matmul_precision("bogus")
        assert vkml.get_float32_matmul_precision() == "high"
        with pytest.raises(RuntimeError, match="expects a str"):
            vkml.set_float32_matmul_precision(3)
        a = vkml.tensor(np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32))
        high = (a @ a).numpy()
        vkml.set_float32_matmul_precision("highest")
        np.testing.assert_array_equal(high, (a @ a).numpy())  # no reduced-precision path on vkml
    finally:
        vkml.set_float32_matmul_precision("highest")


def test_deterministic_algorithms_switch():
    try:
        vkml.use_deterministic_algorithms(True)
        assert vkml.are_deterministic_algorithms_enabled()
        x = vkml.tensor(np.arange(100, dtype=np.float32))
        assert vkml.zeros(10).scatter_add(0, vkml.arange(100) % 10, x).tolist() == [
            float(sum(range(k, 100, 10))) for k in range(10)
        ]
        vkml.use_deterministic_algorithms(False, warn_only=True)
        assert not vkml.are_deterministic_algorithms_enabled()
        with pytest.raises(TypeError, match="'mode' must be bool"):
            vkml.use_deterministic_algorithms("yes")
    finally:
        vkml.use_deterministic_algorithms(False)


def test_compile_wraps_as_torch_and_keeps_the_callable():
    model = nn.Linear(2, 2)
    for compiled in (vkml.compile(model), vkml.compile(model, mode="max-autotune", fullgraph=True, backend="inductor")):
        assert compiled._orig_mod is model and compiled.weight is model.weight  # PyTorch's OptimizedModule
    assert vkml.compile(model, disable=True) is model

    def step(x):
        return x * 2

    for compiled in (vkml.compile(step, options={"trace.enabled": True}), vkml.compile(mode="reduce-overhead")(step)):
        assert compiled.__wrapped__ is step and compiled(3) == 6  # a function calling step, as PyTorch's
    with pytest.raises(RuntimeError, match="Either mode or options"):
        vkml.compile(step, mode="default", options={})
    with pytest.raises(TypeError):
        vkml.compile(step, no_such_argument=1)
