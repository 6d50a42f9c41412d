"""vkml.save / vkml.load: safetensors checkpoints, PyTorch checkpoints, and a training run resumed bit for bit."""

from __future__ import annotations

import io
import math
import pickle
from collections import Counter, OrderedDict

import numpy as np
import pytest
import safetensors.numpy
import torch

import vkml
from vkml.frontend.serialization import _safetensors_metadata


def _roundtrip(obj, **load_kwargs):
    buffer = io.BytesIO()
    vkml.save(obj, buffer)
    buffer.seek(0)
    return vkml.load(buffer, **load_kwargs)


def test_nested_structure_round_trips_with_types_and_values(tmp_path) -> None:
    obj = {
        "ints": [1, -(2**70), True, None],
        "floats": (0.1, math.inf, -0.0),
        "text": "ü",
        3: OrderedDict(b=vkml.tensor([1.5, -2.0], dtype=vkml.float16), a=vkml.tensor([[1, 2]], dtype=vkml.int32)),
        "bool": vkml.tensor([True, False]),
        "empty": vkml.zeros(0, 4),
        "scalar": vkml.tensor(7),
    }
    for target in (tmp_path / "c.safetensors", str(tmp_path / "d.safetensors")):
        vkml.save(obj, target)
        loaded = vkml.load(target)
        assert list(loaded) == list(obj)
        assert loaded["ints"] == obj["ints"] and loaded["text"] == obj["text"]
        assert type(loaded["floats"]) is tuple and [math.copysign(1, v) for v in loaded["floats"]] == [1, 1, -1]
        assert loaded["floats"][:2] == obj["floats"][:2]
        assert type(loaded[3]) is OrderedDict and list(loaded[3]) == ["b", "a"]
        for got, want in [(loaded[3]["b"], obj[3]["b"]), (loaded[3]["a"], obj[3]["a"])] + [
            (loaded[k], obj[k]) for k in ("bool", "empty", "scalar")
        ]:
            assert (got.dtype, got.shape, got.device) == (want.dtype, want.shape, want.device)
            np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_dtypes_devices_numpy_arrays_counters_and_tuple_keys_round_trip() -> None:
    obj = {
        "dtype": vkml.float16,
        "device": vkml.device("cpu"),
        "array": np.arange(4.0),
        "milestones": Counter([3, 3, 7]),
        (1, "a"): 2.5,
        np.int64(3): np.float32(0.5),
    }
    loaded = _roundtrip(obj)
    assert loaded["dtype"] is vkml.float16 and loaded["device"] is vkml.device("cpu")
    assert loaded["array"].dtype == np.float64 and loaded["array"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert type(loaded["milestones"]) is Counter and loaded["milestones"] == obj["milestones"]
    assert loaded[(1, "a")] == 2.5 and loaded[3] == 0.5 and type(loaded[3]) is float


def test_nan_float_and_parameters_round_trip() -> None:
    w = vkml.nn.Parameter(vkml.tensor([1.0, 2.0]))
    loaded = _roundtrip({"nan": math.nan, "w": w, "same": w, "grad": vkml.ones(1, requires_grad=True)})
    assert math.isnan(loaded["nan"])
    assert isinstance(loaded["w"], vkml.nn.Parameter) and loaded["w"].requires_grad
    assert loaded["same"] is loaded["w"]  # one object saved twice loads as one object, as torch.load
    assert loaded["grad"].requires_grad and not isinstance(loaded["grad"], vkml.nn.Parameter)


def test_file_holds_named_tensors_and_no_pickle() -> None:
    """Other safetensors readers see the state dict's names; the record is JSON in the header."""
    net = vkml.nn.Sequential(vkml.nn.Linear(3, 2))
    buffer = io.BytesIO()
    vkml.save(net.state_dict(), buffer)
    arrays = safetensors.numpy.load(buffer.getvalue())
    assert sorted(arrays) == ["0.bias", "0.weight"]
    np.testing.assert_array_equal(arrays["0.weight"], net[0].weight.numpy())
    assert "vkml" in _safetensors_metadata(buffer.getvalue())
    assert b"\x80\x04" not in buffer.getvalue()[:16]


def test_plain_safetensors_file_loads_as_flat_dict(tmp_path) -> None:
    path = tmp_path / "foreign.safetensors"
    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([1, 2], dtype=np.int8)}
    safetensors.numpy.save_file(arrays, path)
    loaded = vkml.load(path)
    assert sorted(loaded) == ["a", "b"]
    np.testing.assert_array_equal(loaded["a"].numpy(), arrays["a"])
    assert loaded["b"].dtype == vkml.int8 and loaded["b"].tolist() == [1, 2]


def test_bfloat16_safetensors_file_loads_as_bfloat16_exactly() -> None:
    import safetensors.torch

    bf16 = torch.tensor([1.0, -3.140625, 1e-40, 3e38], dtype=torch.bfloat16)
    data = safetensors.torch.save({"w": bf16, "i": torch.tensor([7, 8], dtype=torch.int64), "f": torch.ones(2)})
    loaded = vkml.load(io.BytesIO(data))
    assert loaded["w"].dtype == vkml.bfloat16
    assert loaded["w"].float().numpy().tobytes() == bf16.float().numpy().tobytes()
    assert loaded["i"].tolist() == [7, 8] and loaded["f"].tolist() == [1.0, 1.0]


def test_torch_checkpoint_loads_as_vkml_tensors(tmp_path) -> None:
    net = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    net(torch.ones(1, 3)).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.pt"
    torch.save({"model": net.state_dict(), "opt": opt.state_dict(), "bf16": torch.ones(2, dtype=torch.bfloat16)}, path)
    loaded = vkml.load(path)
    assert type(loaded["model"]) is OrderedDict
    for name, value in net.state_dict().items():
        assert isinstance(loaded["model"][name], vkml.Tensor)
        np.testing.assert_array_equal(loaded["model"][name].numpy(), value.numpy())
    assert loaded["opt"]["param_groups"][0]["params"] == [0, 1]
    assert loaded["bf16"].tolist() == [1.0, 1.0]
    vnet = vkml.nn.Linear(3, 2)
    vnet.load_state_dict(loaded["model"])
    np.testing.assert_array_equal(vnet.weight.numpy(), net.weight.detach().numpy())


def test_map_location_forms(gpu) -> None:
    obj = {"a": vkml.ones(2), "b": vkml.ones(2, device=gpu)}
    default = _roundtrip(obj)
    assert (default["a"].device, default["b"].device) == (vkml.device("cpu"), gpu)
    assert _roundtrip(obj, map_location="cpu")["b"].device == vkml.device("cpu")
    assert _roundtrip(obj, map_location=gpu)["a"].device == gpu
    mapped = _roundtrip(obj, map_location={gpu.name: "cpu", "cpu": gpu.name})
    assert (mapped["a"].device, mapped["b"].device) == (gpu, vkml.device("cpu"))
    seen = []
    called = _roundtrip(obj, map_location=lambda t, loc: seen.append(loc) or t * 2)
    assert sorted(seen) == sorted(["cpu", gpu.name]) and called["b"].tolist() == [2.0, 2.0]


def test_unknown_saved_device_names_map_location() -> None:
    buffer = io.BytesIO()
    vkml.save({"a": vkml.ones(1)}, buffer)
    metadata = _safetensors_metadata(buffer.getvalue())
    metadata["vkml"] = metadata["vkml"].replace('"device":"cpu"', '"device":"vulkan:9"')
    data = safetensors.numpy.save(safetensors.numpy.load(buffer.getvalue()), metadata=metadata)
    with pytest.raises(vkml.DeviceError, match="map_location"):
        vkml.load(io.BytesIO(data))
    assert vkml.load(io.BytesIO(data), map_location="cpu")["a"].tolist() == [1.0]


@pytest.mark.parametrize(
    "record",
    ['{"version":1,"object":{"tensor":"missing","dtype":"float32","device":"cpu"}}', '{"version":1,"object":{}}', "[1]"]
    + ['{"version":1,"object":' + "{" + '"list":[' * 5000 + "]}" * 5000 + "}", '{"version":99,"object":null}'],
)
def test_damaged_record_is_refused_as_data(record: str) -> None:
    data = safetensors.numpy.save({"a": np.ones(2, np.float32)}, metadata={"vkml": record})
    with pytest.raises(ValueError, match="load: the"):
        vkml.load(io.BytesIO(data))


def test_save_pickles_other_objects_and_refuses_unpicklable_ones_before_writing() -> None:
    """What is not data is pickled, as torch.save does (tests/test_pickling.py): a weights-only load refuses it."""
    buffer = io.BytesIO()
    vkml.save({"a": [1, slice(2)]}, buffer)
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global: GLOBAL slice was not"):
        vkml.load(buffer)
    buffer.seek(0)
    assert vkml.load(buffer, weights_only=False) == {"a": [1, slice(2)]}
    buffer = io.BytesIO()
    with pytest.raises((AttributeError, pickle.PicklingError), match="local object"):
        vkml.save({"a": [1, lambda: 0]}, buffer)
    assert buffer.getvalue() == b""
    with pytest.raises(ValueError, match="not a vkml checkpoint"):
        vkml.load(io.BytesIO(b"hello world, not a checkpoint"))


# ---------------------------------------------------------------------- resuming training


def _make_run(device, opt_name: str):
    vkml.manual_seed(0)
    net = vkml.nn.Sequential(vkml.nn.Linear(4, 8), vkml.nn.Tanh(), vkml.nn.Linear(8, 2)).to(device)
    kinds = {
        "sgd": lambda p: vkml.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
        "adam": lambda p: vkml.optim.Adam(p, lr=1e-2, amsgrad=True),
        "adamw": lambda p: vkml.optim.AdamW(p, lr=1e-2),
    }
    return net, kinds[opt_name](net.parameters())


def _train(net, opt, steps: range, device) -> None:
    rng = np.random.default_rng(42)
    shapes = ((5, 4), (5, 2))  # float32 batches: a float64 array would make a float64 tensor, as in PyTorch
    batches = [tuple(rng.standard_normal(s).astype(np.float32) for s in shapes) for _ in range(steps.stop)]
    for i in steps:
        x, y = (vkml.tensor(a, device=device) for a in batches[i])
        diff = net(x) - y
        loss = (diff * diff).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


@pytest.mark.parametrize(
    ("opt_name", "where"), [("sgd", "cpu"), ("adam", "cpu"), ("adamw", "cpu"), ("sgd", "gpu"), ("adam", "gpu")]
)
def test_stop_save_load_resume_gives_the_same_bits(opt_name: str, where: str, request, tmp_path) -> None:
    device = vkml.device("cpu") if where == "cpu" else request.getfixturevalue("gpu")
    steps = 4
    straight, straight_opt = _make_run(device, opt_name)
    _train(straight, straight_opt, range(steps), device)

    first, first_opt = _make_run(device, opt_name)
    _train(first, first_opt, range(steps // 2), device)
    path = tmp_path / "run.safetensors"
    vkml.save({"model": first.state_dict(), "optimizer": first_opt.state_dict()}, path)

    resumed, resumed_opt = _make_run(device, opt_name)  # a fresh process would build these the same way
    checkpoint = vkml.load(path)
    resumed.load_state_dict(checkpoint["model"])
    resumed_opt.load_state_dict(checkpoint["optimizer"])
    _train(resumed, resumed_opt, range(steps // 2, steps), device)

    for (name, a), (_, b) in zip(straight.named_parameters(), resumed.named_parameters()):
        assert a.device == b.device == device
        assert a.numpy().tobytes() == b.numpy().tobytes(), name


def test_optimizer_state_dict_has_torch_layout_and_loads_torch_state() -> None:
    tnet = torch.nn.Linear(3, 2)
    topt = torch.optim.Adam(tnet.parameters(), lr=0.01, betas=(0.8, 0.9))
    for _ in range(2):
        topt.zero_grad()
        tnet(torch.ones(4, 3)).pow(2).sum().backward()
        topt.step()
    vnet = vkml.nn.Linear(3, 2)
    vnet.load_state_dict(tnet.state_dict())
    vopt = vkml.optim.Adam(vnet.parameters(), lr=0.5)
    vopt.load_state_dict(topt.state_dict())
    sd = vopt.state_dict()
    assert sorted(sd) == ["param_groups", "state"] and sd["param_groups"][0]["params"] == [0, 1]
    assert sd["param_groups"][0]["lr"] == 0.01 and sd["param_groups"][0]["betas"] == (0.8, 0.9)
    assert sd["state"][0]["step"] == 2
    for _ in range(2):
        for net, opt, x in ((tnet, topt, torch.ones(4, 3)), (vnet, vopt, vkml.ones(4, 3))):
            opt.zero_grad()
            (net(x) * net(x)).sum().backward()
            opt.step()
    np.testing.assert_allclose(vnet.weight.numpy(), tnet.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        vopt.load_state_dict({"state": {}, "param_groups": []})
