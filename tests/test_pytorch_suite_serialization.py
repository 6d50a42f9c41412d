"""PyTorch's test/test_serialization.py, run on torch and on vkml side by side.

Each scenario follows one of its tests whose subject vkml has: ``save`` then ``load`` of tensors (every
dtype the test samples, empty and 0-d ones), of one tensor listed twice (one object after the load, so an
in-place write shows through both), of views of one storage (still views of one storage), of modules,
state dicts, optimizers' and LR schedulers' state dicts and nested containers, through a path, a
``pathlib.Path``, an open file, a ``BytesIO`` and a gzip stream, several checkpoints and pickles one after
another in one file, the ``map_location`` forms, ``pickle_protocol`` and ``_use_new_zipfile_serialization``,
``weights_only=True`` with ``safe_globals``/``add_safe_globals`` and its errors, Python attributes on tensors
and Parameters, and the errors for what is not a file. Each library reads back what it wrote (vkml's files
are safetensors, not torch's zip archives: docs/saving.md), and vkml must return, raise and warn what torch
does (tests/pytorch_suite.py). PyTorch-written files read by vkml are compared at the end of the file.
"""

from __future__ import annotations

import copy
import dataclasses
import gzip
import io
import os
import pickle
import shutil
import tempfile
from collections import OrderedDict, namedtuple
from pathlib import Path

import numpy as np
import pytest
import torch
from pytorch_suite import check, differences, known_params, record

import vkml

SC = {}


def sc(f):
    SC[f.__name__] = f
    return f


def ser(m):
    return m.serialization


def round_trip(m, obj, **load_kwargs):
    """``obj`` saved to a BytesIO and loaded back."""
    buffer = io.BytesIO()
    m.save(obj, buffer)
    buffer.seek(0)
    return m.load(buffer, **load_kwargs)


def outcome(fn):
    """What ``fn()`` returns, or the class and message of what it raises."""
    try:
        return ("returns", fn())
    except Exception as error:  # the class and message are what is compared
        return ("raises", type(error).__name__, str(error).replace("torch", "vkml"))


def values(m, shape, seed=0, dtype="float32"):
    rng = np.random.default_rng(seed)
    return m.tensor(rng.standard_normal(shape).astype(dtype))


def serialization_data(m):
    """The test's _test_serialization_data, without storages (vkml has none): tensors, one listed twice."""
    a = [values(m, (5, 5), seed) for seed in range(2)]
    return [a[i % 2] for i in range(4)] + [m.arange(1, 11).int()]


def after_writes(c):
    """What the test's _test_serialization_assert checks: a write through one entry shows through its twin."""
    c[0].fill_(10)
    c[1].fill_(20)
    return c, c[0] is c[2], c[1] is c[3]


def serialization(weights_only, where):
    def f(m):
        b = serialization_data(m)
        if where == "bytesio":
            c = round_trip(m, b, weights_only=weights_only)
        elif where == "tempfile":
            with tempfile.NamedTemporaryFile() as handle:
                m.save(b, handle)
                handle.seek(0)
                c = m.load(handle, weights_only=weights_only)
        else:
            with tempfile.TemporaryDirectory(suffix="\u975eASCII\u30d1\u30b9") as folder:
                name = os.path.join(folder, "checkpoint.pt")
                m.save(b, name if where == "name" else Path(name))
                c = m.load(name if where == "name" else Path(name), weights_only=weights_only)
        return b, after_writes(c)

    return f


for _weights_only in (True, False):
    for _where in ("bytesio", "tempfile", "name", "path"):
        SC[f"serialization_{_where}_weights_only_{_weights_only}"] = serialization(_weights_only, _where)


@sc
def views_of_one_storage_stay_views(m):
    x = m.arange(12.0).view(3, 4)
    c = round_trip(m, [x, x[1], x.t(), x[:, 1:3]], weights_only=True)
    c[0].mul_(-1)
    return c, [tuple(t.stride()) for t in c], [t.storage_offset() for t in c], c[1].is_contiguous()


@sc
def view_saved_alone_keeps_its_values(m):
    x = m.arange(30.0)
    v = x.as_strided([2, 3], [9, 3], 2)
    loaded = round_trip(m, v)  # torch keeps the strides of the whole storage; vkml stores the values (docs/saving.md)
    return loaded, tuple(loaded.shape)


@sc
def safe_load_basic_types(m):
    data = {"int": 123, "str": "world", "float": 3.14, "bool": False}
    return round_trip(m, data, weights_only=True)


@sc
def nested_containers(m):
    obj = {
        "list": [m.ones(2), (m.zeros(1, dtype=m.int32), "text", None)],
        "ordered": OrderedDict([("b", 1), ("a", [2.5, -0.0, float("inf")])]),
        "tuple": (1, (2, (3,))),
        "dict": {0: m.tensor(True), 1: {"deep": m.tensor([[1, 2]], dtype=m.int8)}},
        "nan": float("nan"),
        "big": 2**70,
    }
    loaded = round_trip(m, obj)
    return loaded, type(loaded["ordered"]).__name__, list(loaded["ordered"]), type(loaded["list"][1]).__name__


DTYPES = ("float32", "float64", "float16", "bfloat16", "bool", "int8", "uint8", "int16", "int32", "int64")


@sc
def dtypes_survive(m):
    out = []
    for name in DTYPES:
        dtype = getattr(m, name)
        t = (m.arange(-3, 3) * 1.5).to(dtype)
        loaded = round_trip(m, {"t": t, "scalar": m.tensor(2, dtype=dtype), "empty": m.tensor([], dtype=dtype)})
        out.append({k: (v.dtype, tuple(v.shape), v.float() if name == "bfloat16" else v) for k, v in loaded.items()})
    return out


@sc
def empty_tensors_of_every_dtype_in_one_list(m):
    tensors = [m.tensor([], dtype=getattr(m, name)) for name in DTYPES]
    loaded = round_trip(m, tensors)
    return [(t.dtype, tuple(t.shape)) for t in loaded], [t.dtype for t in round_trip(m, [m.empty(0, 3, 0)])]


@sc
def zero_dim_and_shapes(m):
    obj = [m.tensor(3.5), m.zeros(0), m.ones(2, 0, 3), m.tensor([[[7]]], dtype=m.int64)]
    return [(t.shape, t.dim(), t) for t in round_trip(m, obj)]


@sc
def requires_grad_and_parameters(m):
    p = m.nn.Parameter(m.ones(2))
    t = m.ones(3, requires_grad=True)
    loaded = round_trip(m, {"p": p, "t": t, "plain": m.ones(1)})
    return {k: (type(v).__name__, v.requires_grad, v.grad is None, v) for k, v in loaded.items()}


def python_attributes(weights_only, parameter):
    def f(m):
        t = m.zeros(3, 3)
        if parameter:
            t = m.nn.Parameter(t)
        t.foo = "foo"
        t.pi = 3.14
        loaded = round_trip(m, t, weights_only=weights_only)
        return loaded, type(loaded).__name__, getattr(loaded, "foo", None), getattr(loaded, "pi", None)

    return f


for _weights_only in (True, False):
    for _parameter in (False, True):
        SC[f"python_attributes_weights_only_{_weights_only}_parameter_{_parameter}"] = python_attributes(
            _weights_only, _parameter
        )


def seeded_linear(m, *shape):
    m.manual_seed(0)
    return m.nn.Linear(*shape)


@sc
def module_state_dict(m):
    model = m.nn.Sequential(seeded_linear(m, 3, 4), m.nn.BatchNorm1d(4))
    state = round_trip(m, model.state_dict())
    fresh = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.BatchNorm1d(4))
    fresh.load_state_dict(state)
    return type(state).__name__, list(state), state, getattr(state, "_metadata", None), fresh.eval()(m.ones(2, 3))


@sc
def whole_module_with_weights_only_false(m):
    model = seeded_linear(m, 2, 3)
    loaded = round_trip(m, model, weights_only=False)
    return type(loaded).__name__, loaded.weight, loaded.bias, loaded(m.ones(1, 2))


@sc
def whole_module_with_weights_only_true(m):
    refused = outcome(lambda: round_trip(m, seeded_linear(m, 2, 3), weights_only=True))
    words = "Unsupported global: GLOBAL vkml.nn.modules.linear.Linear was not an allowed global by default."
    return refused[:2], words in refused[-1], "add_safe_globals([vkml.nn.modules.linear.Linear])" in refused[-1]


@sc
def saving_a_module_gives_no_warning(m):
    m.save(m.nn.Linear(2, 3), io.BytesIO())
    return "saved"


@sc
def optimizer_state_dict(m):
    model = seeded_linear(m, 3, 2)
    opt = m.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(m.ones(4, 3)).sum().backward()
    opt.step()
    state = round_trip(m, opt.state_dict())
    saved = copy.deepcopy(state)  # torch's load_state_dict keeps the loaded 'step' tensor, which step() then bumps
    fresh_opt = m.optim.SGD(model.parameters(), lr=0.5, momentum=0.5)
    fresh_opt.load_state_dict(state)
    model.zero_grad()
    model(m.ones(4, 3)).pow(2).sum().backward()
    fresh_opt.step()
    return saved, fresh_opt.param_groups[0]["lr"], model.weight


@sc
def lr_scheduler_state_dict(m):
    sgd = m.optim.SGD([m.ones(4, 4, requires_grad=True)], lr=0.1, momentum=0.9)
    scheduler = m.optim.lr_scheduler.OneCycleLR(sgd, 6.0, total_steps=10)
    state = round_trip(m, scheduler.state_dict())
    return state["base_lrs"] == scheduler.base_lrs, sorted(k for k in state if k != "anneal_func")


@sc
def several_checkpoints_and_pickles_in_one_file(m):
    a, b = values(m, (5, 5), 1), values(m, (7,), 2)
    conv = m.nn.Conv2d(1, 1, (1, 3))
    legacy = {"_use_new_zipfile_serialization": False}  # PyTorch's test runs it so: a zip archive must end its file
    with tempfile.NamedTemporaryFile() as f:
        pickle.dump(41, f)
        m.save(a, f, **legacy)
        pickle.dump(43, f)
        m.save(b, f, **legacy)
        m.save(conv, f, **legacy)
        f.seek(0)
        i = pickle.load(f)
        a_loaded = m.load(f)
        j = pickle.load(f)
        b_loaded = m.load(f)
        conv_loaded = m.load(f, weights_only=False)
    return i, a_loaded, j, b_loaded, conv_loaded.kernel_size


@sc
def gzip_stream(m):
    b = serialization_data(m)
    with tempfile.TemporaryDirectory() as folder:
        plain_name, zipped = os.path.join(folder, "plain"), os.path.join(folder, "zipped")
        m.save(b, plain_name)
        with open(plain_name, "rb") as f_in, gzip.open(zipped, "wb") as f_out:
            shutil.copyfileobj(f_in, f_out)
        with gzip.open(zipped, "rb") as f:
            return after_writes(m.load(f))


@sc
def gzip_stream_after_a_pickle(m):
    a = values(m, (5, 5), 3)
    with tempfile.TemporaryDirectory() as folder:
        plain_name, zipped = os.path.join(folder, "plain"), os.path.join(folder, "zipped")
        with open(plain_name, "wb") as f:
            pickle.dump(41, f)
            m.save(a, f)
        with open(plain_name, "rb") as f_in, gzip.open(zipped, "wb") as f_out:
            shutil.copyfileobj(f_in, f_out)
        with gzip.open(zipped, "rb") as f:
            return pickle.load(f), m.load(f)


@sc
def pickle_protocols_and_zipfile_flag(m):
    x = values(m, (3, 2), 4)
    out = []
    for kwargs in ({"pickle_protocol": 2}, {"pickle_protocol": 4}, {"_use_new_zipfile_serialization": False}):
        buffer = io.BytesIO()
        m.save({"x": x, "n": 3}, buffer, **kwargs)
        buffer.seek(0)
        # torch's weights-only reader takes neither protocol 4's frames nor its legacy format
        out.append(m.load(buffer, weights_only=kwargs == {"pickle_protocol": 2}))
    return out


@sc
def pickle_protocol_of_the_wrong_type(m):
    return m.save(m.ones(1), io.BytesIO(), pickle_protocol="2")


class ThrowingUnpickler(pickle.Unpickler):
    def load(self, *args, **kwargs):
        raise RuntimeError("rumpelstiltskin")


class ThrowingModule:
    Unpickler = ThrowingUnpickler
    load = ThrowingUnpickler.load


@sc
def pickle_module_is_used_to_load(m):
    buffer = io.BytesIO()
    m.save(seeded_linear(m, 3, 3), buffer)  # pickled by both (vkml's tensors-only files never unpickle)
    buffer.seek(0)
    thrown = outcome(lambda: m.load(buffer, pickle_module=ThrowingModule, weights_only=False))
    buffer.seek(0)
    refused = outcome(lambda: type(m.load(buffer, pickle_module=pickle)).__name__)  # weights_only then defaults False
    buffer.seek(0)
    return thrown, refused, m.load(buffer, weights_only=False).weight


def map_locations(m):
    return {
        "callable": lambda storage, location: storage,
        "dict": {"cpu": "cpu"},
        "str": "cpu",
        "device": m.device("cpu"),
        "device_index_str": "cpu",
    }


@sc
def map_location_forms(m):
    t = m.tensor([[1.0, 2.0], [3.0, 4.0]])
    out = []
    for name, location in map_locations(m).items():
        loaded = round_trip(m, {"t": t}, map_location=location)["t"]
        out.append((name, str(loaded.device), loaded))
    return out


@sc
def map_location_callable_sees_the_saved_location(m):
    seen = []

    def where(storage, location):
        seen.append(location)
        return None  # the default place

    loaded = round_trip(m, [m.ones(2), m.zeros(1)], map_location=where)
    return seen, loaded


@sc
def deepcopy_of_devices(m):
    device = m.device("cpu")
    return copy.deepcopy(device) == device, str(copy.deepcopy(device))


@sc
def deepcopy_of_an_indexed_cpu_device(m):
    device = m.device("cpu:0")
    return copy.deepcopy(device) == device, copy.deepcopy(device).type


@sc
def indexed_cpu_device_keeps_its_index(m):
    return str(m.device("cpu:0"))


class HelloWorld:
    def __reduce__(self):
        return (print, ("Hello World!",))


@sc
def weights_only_refuses_a_global(m):
    buffer = io.BytesIO()
    m.save(HelloWorld(), buffer)
    buffer.seek(0)
    unsafe = m.load(buffer, weights_only=False)
    buffer.seek(0)
    refused = outcome(lambda: m.load(buffer, weights_only=True))
    with ser(m).safe_globals([print]):
        buffer.seek(0)
        allowed = m.load(buffer, weights_only=True)
    return unsafe, refused[:2], "Unsupported global: GLOBAL print was not" in refused[-1], allowed


Point = namedtuple("Point", ["x", "y"])


@sc
def weights_only_namedtuple_needs_allowing(m):
    buffer = io.BytesIO()
    m.save(Point(x=1, y=2), buffer)
    buffer.seek(0)
    refused = outcome(lambda: m.load(buffer, weights_only=True))
    buffer.seek(0)
    with ser(m).safe_globals([Point]):
        loaded = m.load(buffer, weights_only=True)
    return refused[:2], f"GLOBAL {__name__}.Point was not an allowed global by default" in refused[-1], loaded


class ClassThatUsesBuildInstruction:
    def __init__(self, num):
        self.num = num

    def __reduce_ex__(self, proto):
        return ClassThatUsesBuildInstruction, (self.num,), {"foo": "bar"}  # the state: a BUILD instruction


@sc
def weights_only_build_instruction(m):
    buffer = io.BytesIO()
    m.save(ClassThatUsesBuildInstruction(2), buffer)
    buffer.seek(0)
    refused = outcome(lambda: m.load(buffer, weights_only=True))
    buffer.seek(0)
    with ser(m).safe_globals([ClassThatUsesBuildInstruction]):
        loaded = m.load(buffer, weights_only=True)
    return refused[:2], loaded.num, loaded.foo


@dataclasses.dataclass
class AllSlots:
    __slots__ = ["x", "y"]
    x: int
    y: int


@dataclasses.dataclass
class SomeSlots(AllSlots):
    x: int
    y: int
    c: str


def build_with_slots(cls, args):
    def f(m):
        buffer = io.BytesIO()
        m.save(cls(*args), buffer)
        buffer.seek(0)
        refused = outcome(lambda: m.load(buffer, weights_only=True))
        buffer.seek(0)
        with ser(m).safe_globals([cls]):
            loaded = m.load(buffer, weights_only=True)
        return refused[:2], loaded == cls(*args)

    return f


SC["weights_only_build_with_all_slots"] = build_with_slots(AllSlots, (2, 3))
SC["weights_only_build_with_some_slots"] = build_with_slots(SomeSlots, (2, 3, "foo"))


@sc
def weights_only_blocked_module(m):
    buffer = io.BytesIO()
    m.save(os.execv, buffer)
    buffer.seek(0)
    refused = outcome(lambda: m.load(buffer, weights_only=True))
    buffer.seek(0)
    with ser(m).safe_globals([os.execv]):
        still = outcome(lambda: m.load(buffer, weights_only=True))
    phrase = "unsupported GLOBAL posix.execv whose module posix is blocked"
    return refused[:2], phrase in str(refused[-1]), still[:2], phrase in str(still[-1])


class Custom:
    def __init__(self):
        self.value = 1


@sc
def weights_only_error_suggests_add_safe_globals(m):
    buffer = io.BytesIO()
    m.save({"c": Custom(), "t": m.ones(1)}, buffer)
    buffer.seek(0)
    refused = outcome(lambda: m.load(buffer))
    words = f"serialization.add_safe_globals([{__name__}.Custom])"
    return refused[:2], words in refused[-1]


@sc
def safe_globals_context_and_list(m):
    s = ser(m)
    s.clear_safe_globals()
    s.add_safe_globals([Custom])
    listed = s.get_safe_globals()
    with s.safe_globals([Point]):
        inside = s.get_safe_globals()
    after = s.get_safe_globals()
    s.clear_safe_globals()
    return listed == [Custom], set(inside) == {Custom, Point}, after == [Custom], s.get_safe_globals()


class FilelikeMock:
    """A file object with only some of the methods (PyTorch's FilelikeMock)."""

    def __init__(self, data, seekable=True):
        self.bytesio = io.BytesIO(data)
        names = ["read", "readline", "write", "flush"] + (["seek", "tell"] if seekable else [])
        for name in names:
            setattr(self, name, getattr(self.bytesio, name))


@sc
def file_like_mock_round_trip(m):
    t = values(m, (3, 10), 5)
    f = FilelikeMock(b"")
    m.save(t, f)
    f.seek(0)
    return m.load(FilelikeMock(f.read()))


@sc
def load_from_an_unseekable_file(m):
    return m.load(FilelikeMock(b"data", seekable=False), weights_only=False)


@sc
def save_into_a_tensor(m):
    return m.save("foo", m.rand(10))


@sc
def save_into_an_object_whose_write_is_not_callable(m):
    class Sink:
        write = "bar"
        flush = "baz"

    return m.save("foo", Sink())


@sc
def save_into_a_numpy_array(m):
    x = np.zeros((3, 3), np.float32)
    return m.save(x, x)


@sc
def load_a_missing_file(m):
    return m.load(os.path.join(tempfile.gettempdir(), "no-such-vkml-checkpoint.pt"))


@sc
def load_garbage_bytes(m):
    return m.load(io.BytesIO(b"not a checkpoint at all"), weights_only=False)


@sc
def load_garbage_bytes_weights_only(m):
    try:
        m.load(io.BytesIO(b"not a checkpoint at all"))
    except pickle.UnpicklingError:
        return "UnpicklingError"


@sc
def load_empty_file(m):
    return outcome(lambda: m.load(io.BytesIO(b"")))[:2]


@sc
def mmap_needs_a_path(m):
    buffer = io.BytesIO()
    m.save(m.ones(1), buffer)
    buffer.seek(0)
    return m.load(buffer, mmap=True)


@sc
def mmap_with_a_path(m):
    with tempfile.TemporaryDirectory() as folder:
        name = os.path.join(folder, "w.pt")
        m.save({"w": m.arange(4.0)}, name)
        return m.load(name, mmap=True)


def dtype_with_views(dtype_name, weights_only):
    def f(m):
        x = m.arange(0.0, 100.0).to(getattr(m, dtype_name))
        y = round_trip(m, {"x": x, "even": x[0::2], "odd": x[1::2]}, weights_only=weights_only)
        y["odd"][0] = 1
        y["even"][0] = 2  # the views are views of the loaded x
        return y["x"][:4], y["even"][:2], y["odd"].shape

    return f


for _dtype in ("uint16", "int16", "float16"):  # vkml has no uint32/uint64 tensors (docs/dtypes.md)
    for _weights_only in (True, False):
        SC[f"dtype_with_views_{_dtype}_weights_only_{_weights_only}"] = dtype_with_views(_dtype, _weights_only)


def byte_literal(value, weights_only):
    def f(m):
        loaded = round_trip(m, value, weights_only=weights_only)
        return type(loaded).__name__, bytes(loaded)

    return f


for _value in (b"byte", bytearray(b"bytearray")):
    for _weights_only in (True, False):
        SC[f"byte_literal_{type(_value).__name__}_weights_only_{_weights_only}"] = byte_literal(_value, _weights_only)


@sc
def checkpoint_after_a_header(m):
    orig = values(m, (3, 3), 6)
    f = io.BytesIO()
    f.write(b"header")
    m.save(orig, f)
    f.seek(6)
    return m.load(f)


def preserves_dtype(dtype_name, weights_only):
    def f(m):
        dtype = getattr(m, dtype_name)
        rng = np.random.default_rng(7)
        if dtype_name.startswith("float") or dtype_name == "bfloat16":
            t = m.tensor(rng.standard_normal(10).astype(np.float32)).to(dtype)
        elif dtype_name == "bool":
            t = m.tensor(rng.standard_normal(10) > 0)
        else:
            t = m.tensor(rng.integers(-100, 100, 10)).to(dtype)
        module = m.nn.Module()
        module.param = m.nn.Parameter(t, requires_grad=t.is_floating_point())
        loaded = round_trip(m, {"t": t, "sd": module.state_dict(), "i": t[0].item()}, weights_only=weights_only)
        return {
            k: (v.float() if dtype_name == "bfloat16" and k == "t" else v) for k, v in loaded.items() if k != "sd"
        }, {k: (v.dtype, v.requires_grad, type(v).__name__) for k, v in loaded["sd"].items()}

    return f


for _dtype in ("float32", "float64", "float16", "bfloat16", "bool", "int8", "uint8", "int16", "int32", "int64"):
    for _weights_only in (True, False):
        SC[f"preserves_dtype_{_dtype}_weights_only_{_weights_only}"] = preserves_dtype(_dtype, _weights_only)


# Divergences not fixed yet: strict xfails, so that a fix shows up as an XPASS to remove from here.
KNOWN: dict[str, str] = {
    "indexed_cpu_device_keeps_its_index": "vkml has one CPU device, named 'cpu' ('cpu:0' is that device)",
}


@pytest.fixture(autouse=True)
def _empty_allowlists():
    vkml.serialization.clear_safe_globals()
    torch.serialization.clear_safe_globals()
    yield
    vkml.serialization.clear_safe_globals()
    torch.serialization.clear_safe_globals()


@pytest.mark.parametrize("name", known_params(SC, KNOWN))
def test_serialization_scenario_matches_torch(name: str) -> None:
    check(SC[name])


def test_save_and_load_on_vulkan(gpu) -> None:
    """A sample on the Vulkan device: a state dict and views of one storage saved there come back there, sharing."""

    def scenario(m):
        device = {"device": gpu} if m is vkml else {}
        x = m.arange(12.0, **device).view(3, 4)
        state = round_trip(m, {"w": x, "h": x.half(), "b": x > 5})
        views = round_trip(m, [x, x[1], x.t()], weights_only=True)
        views[0].mul_(2)
        devices = [t.device.type in ("cpu", "vulkan") for t in [*state.values(), *views]]
        return state, views, devices, str(round_trip(m, x, map_location="cpu").device)

    check(scenario)


TORCH_WRITTEN = {
    "tensors_of_each_dtype": lambda: {
        name: (torch.arange(-3, 3) * 1.5).to(getattr(torch, name)) for name in DTYPES if name != "float64"
    },
    "views_with_offsets_and_strides": lambda: (lambda x: [x, x[1], x.t(), x[:, 1:3]])(torch.arange(12.0).view(3, 4)),
    "module_state_dict": lambda: (torch.manual_seed(0), torch.nn.Sequential(torch.nn.Linear(3, 2)).state_dict())[1],
    "parameters_and_containers": lambda: {
        "p": torch.nn.Parameter(torch.ones(2)),
        "list": [1, 2.5, "s", None, (True,)],
        "size": torch.Size([2, 3]),
        "dtype": torch.float16,
        "empty": torch.zeros(0, 3),
        "scalar": torch.tensor(7),
    },
}


@pytest.mark.parametrize("name", list(TORCH_WRITTEN))
def test_pytorch_written_files_load_in_vkml_as_in_torch(name: str) -> None:
    """docs/saving.md promises torch.save's zip files load in vkml without torch: the same objects as torch.load."""
    buffer = io.BytesIO()
    torch.save(TORCH_WRITTEN[name](), buffer)
    data = buffer.getvalue()
    want, _ = record(lambda _: torch.load(io.BytesIO(data)), torch)
    got, _ = record(lambda _: vkml.load(io.BytesIO(data)), vkml)
    found = differences(got, want)
    assert not found, "\n".join(found)
    if name == "views_with_offsets_and_strides":
        loaded = vkml.load(io.BytesIO(data))
        loaded[0].mul_(-1)  # views of one storage: the write shows through the row view
        assert loaded[1].tolist() == [-4.0, -5.0, -6.0, -7.0]


def test_a_big_endian_pytorch_file_loads_as_in_torch() -> None:
    """PyTorch's test_serialization_load_bom_data: a file whose byteorder record says big loads with its values
    (made here from a little-endian torch.save by swapping the stored bytes and the record)."""
    import zipfile

    x = torch.tensor([[1.5, -2.25], [3.0, 1e-3]])
    buffer = io.BytesIO()
    torch.save(x.half(), buffer)
    source, out = zipfile.ZipFile(io.BytesIO(buffer.getvalue())), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename.endswith("/byteorder"):
                data = b"big"
            elif "/data/" in info.filename:
                data = np.frombuffer(data, "<f2").astype(">f2").tobytes()
            target.writestr(info.filename, data)
    want, _ = record(lambda _: torch.load(io.BytesIO(out.getvalue())), torch)
    got, _ = record(lambda _: vkml.load(io.BytesIO(out.getvalue())), vkml)
    assert not differences(got, want) and want[1] == "float16"
