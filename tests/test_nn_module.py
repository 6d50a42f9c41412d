"""vkml.nn.Module and its containers against torch.nn: the same architecture, built in both, has the
same names (parameters, modules, buffers, state dict keys), the same repr and the same errors."""

from __future__ import annotations

import re
from collections import OrderedDict

import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml
import vkml.nn as nn

CPU = vkml.device("cpu")
VK = (nn, vkml.tensor)
PT = (torch.nn, torch.tensor)


# ---------------------------------------------------------------------- architectures, built from (nn, tensor)
def _block_class(lib, tensor):
    class Block(lib.Module):
        def __init__(self, width: int):
            super().__init__()
            self.fc = lib.Linear(width, width)
            self.norm = lib.LayerNorm(width)
            self.register_buffer("running", tensor(np.zeros(width, np.float32)))
            self.register_buffer("mask", tensor(np.ones(width, np.float32)), persistent=False)
            self.register_buffer("steps", tensor(np.zeros((), np.int64)))

        def forward(self, x):
            return self.norm(self.fc(x)).relu() * self.mask + self.running

    return Block


def _with_containers(lib, tensor):
    class Model(lib.Module):
        def __init__(self):
            super().__init__()
            block = _block_class(lib, tensor)
            self.embed = lib.Embedding(7, 4)
            self.blocks = lib.ModuleList([block(4) for _ in range(2)])
            self.heads = lib.ModuleDict({"score": lib.Linear(4, 1), "label": lib.Linear(4, 3, bias=False)})
            self.scales = lib.ParameterList(
                [lib.Parameter(tensor(np.ones(4, np.float32))), tensor(np.ones(2, np.float32))]
            )
            self.extra = lib.ParameterDict({"b": tensor(np.zeros(3, np.float32)), "a": tensor(np.ones(1, np.float32))})
            self.register_parameter("unused", None)
            self.empty = None
            self.register_buffer("none_buffer", None)

        def forward(self, tokens):
            x = self.embed(tokens) * self.scales[0]
            for block in self.blocks:
                x = block(x)
            return self.heads["score"](x)

    return Model()


def _shared_and_tied(lib, tensor):
    shared = lib.Linear(3, 3)
    net = lib.Sequential(lib.Embedding(5, 3), shared, lib.ReLU(), shared, lib.Linear(3, 5, bias=False))
    net[4].weight = net[0].weight  # tied input and output embeddings
    net.add_module("skip", None)
    return net


ARCHITECTURES = {
    "sequential": lambda lib, t: lib.Sequential(lib.Linear(3, 4), lib.ReLU(), lib.Linear(4, 2, bias=False)),
    "sequential_ordered_dict": lambda lib, t: lib.Sequential(
        OrderedDict(fc=lib.Linear(2, 3), act=lib.Tanh(), out=lib.Sequential(lib.Linear(3, 1), lib.Sigmoid()))
    ),
    "containers_and_buffers": _with_containers,
    "shared_module_tied_weight": _shared_and_tied,
    "module_list_repeats": lambda lib, t: lib.ModuleList(
        [lib.Linear(2, 2), lib.Linear(2, 2), lib.GELU(), lib.Linear(2, 2), lib.ModuleList()]
    ),
}

NAMINGS = {
    "named_parameters": lambda m: [n for n, _ in m.named_parameters()],
    "named_parameters_all": lambda m: [n for n, _ in m.named_parameters(remove_duplicate=False)],
    "named_parameters_prefix": lambda m: [n for n, _ in m.named_parameters(prefix="model")],
    "parameters_here": lambda m: [tuple(p.shape) for p in m.parameters(recurse=False)],
    "named_modules": lambda m: [(n, type(x).__name__) for n, x in m.named_modules()],
    "named_modules_all": lambda m: [n for n, _ in m.named_modules(remove_duplicate=False)],
    "modules": lambda m: [type(x).__name__ for x in m.modules()],
    "named_children": lambda m: [n for n, _ in m.named_children()],
    "children": lambda m: [type(x).__name__ for x in m.children()],
    "named_buffers": lambda m: [n for n, _ in m.named_buffers()],
    "buffers_here": lambda m: [tuple(b.shape) for b in m.buffers(recurse=False)],
    "state_dict": lambda m: list(m.state_dict()),
    "state_dict_prefix": lambda m: list(m.state_dict(prefix="net.")),
    "apply_order": lambda m: _apply_order(m),
    "repr": lambda m: repr(m),
    "len_iter": lambda m: [type(x).__name__ for x in m] if hasattr(m, "__iter__") else None,
}


def _apply_order(module) -> list[str]:
    seen = []
    module.apply(lambda m: seen.append(type(m).__name__))
    return seen


def _torch_repr(text: str) -> str:
    """torch's repr with torch's names written as vkml's (ParameterDict prints torch.FloatTensor)."""
    text = text.replace("torch.", "vkml.")
    if "bias=" not in repr(torch.nn.LayerNorm(2)):  # PyTorch before 2.13 leaves LayerNorm's bias out
        text = re.sub(r"(LayerNorm\([^\n]*elementwise_affine=\w+)\)", r"\1, bias=True)", text)
    return text


@pytest.mark.parametrize("arch", ARCHITECTURES)
@pytest.mark.parametrize("naming", NAMINGS)
def test_names_and_repr_match_torch(arch, naming):
    ours = NAMINGS[naming](ARCHITECTURES[arch](*VK))
    theirs = NAMINGS[naming](ARCHITECTURES[arch](*PT))
    if naming == "repr":
        theirs = _torch_repr(theirs)
    assert ours == theirs


def test_state_dict_values_are_detached_and_tied_weights_listed_twice():
    net = _shared_and_tied(*VK)
    state = net.state_dict()
    assert type(state) is OrderedDict
    assert state["0.weight"].node is net[0].weight.node and state["4.weight"].node is net[0].weight.node
    assert not any(isinstance(v, nn.Parameter) or v.requires_grad for v in state.values())
    kept = net.state_dict(keep_vars=True)
    assert kept["1.weight"] is net[1].weight and kept["3.weight"] is net[1].weight
    assert len(list(net.parameters())) == 3  # embedding, shared weight and bias; the tied head adds none


def test_load_state_dict_from_torch_gives_torch_outputs():
    torch.manual_seed(0)
    theirs = _with_containers(*PT)
    with torch.no_grad():
        for block in theirs.blocks:
            block.running.uniform_(-1, 1)  # persistent: loaded; the non-persistent mask stays ones
    ours = _with_containers(*VK)
    params = {name: p for name, p in ours.named_parameters()}
    result = ours.load_state_dict(theirs.state_dict())
    assert result == theirs.load_state_dict(theirs.state_dict()) and repr(result) == "<All keys matched successfully>"
    assert all(p is params[name] for name, p in ours.named_parameters())  # the same Parameter objects
    tokens = np.array([[1, 6, 0], [3, 3, 2]])
    expected = theirs(torch.from_numpy(tokens)).detach().numpy()
    np.testing.assert_allclose(ours(vkml.tensor(tokens)).numpy(), expected, rtol=1e-5, atol=1e-6)
    assert ours.blocks[1].mask.tolist() == [1.0] * 4  # non-persistent: not in the state dict, untouched


def test_load_state_dict_keeps_parameters_an_optimizer_holds(gpu):
    net = nn.Linear(3, 2).to(gpu)
    weight = net.weight
    opt = vkml.optim.SGD(net.parameters(), lr=0.5)
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    net.load_state_dict({"weight": values, "bias": vkml.tensor([1.0, 2.0])})  # numpy and a CPU tensor
    assert net.weight is weight and opt.param_groups[0]["params"][0] is weight
    assert weight.device is gpu and weight.requires_grad and weight.is_leaf
    assert_same_bits(weight.numpy(), values, "loaded weight")
    net(vkml.ones(1, 3, device=gpu)).sum().backward()
    opt.step()
    assert_same_bits(weight.numpy(), values - 0.5, "the optimizer steps the loaded values")


def test_load_state_dict_casts_to_the_parameter_dtype():
    net = nn.Linear(2, 2).half()
    source = torch.nn.Linear(2, 2).to(torch.bfloat16)
    net.load_state_dict(source.state_dict())
    assert net.weight.dtype is vkml.float16
    expected = source.weight.detach().float().numpy().astype(np.float16)
    assert_same_bits(net.weight.numpy(), expected, "bfloat16 -> float16")


def _state(lib, tensor, drop=(), extra=None, reshape=None):
    net = ARCHITECTURES["sequential"](lib, tensor)
    state = {k: v for k, v in net.state_dict().items() if k not in drop}
    if reshape:
        state[reshape] = tensor(np.zeros((5, 5), np.float32))
    state.update({k: tensor(np.zeros(1, np.float32)) for k in extra or ()})
    return net, state


LOAD_CASES = {
    "missing": dict(drop=("0.bias",)),
    "unexpected": dict(extra=("2.bias", "3.weight", "0.extra", "top")),
    "both": dict(drop=("2.weight",), extra=("1.weight",)),
    "size_mismatch": dict(reshape="0.weight"),
    "size_mismatch_and_missing": dict(reshape="2.weight", drop=("0.bias",)),
}


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("case", LOAD_CASES)
def test_load_state_dict_reports_as_torch(case, strict):
    outcomes = []
    for lib in (VK, PT):
        net, state = _state(*lib, **LOAD_CASES[case])
        before = {k: np.array(v.detach().numpy()) for k, v in net.state_dict().items()}
        try:
            outcomes.append(tuple(net.load_state_dict(state, strict=strict)))
        except RuntimeError as error:
            message = re.sub(r"(torch|vkml)\.Size\(", "Size(", str(error))
            outcomes.append(("RuntimeError", message))
            if lib is VK:  # vkml writes nothing when it raises (PyTorch may have loaded some keys)
                for k, v in net.state_dict().items():
                    assert_same_bits(v.numpy(), before[k], k)
    assert outcomes[0] == outcomes[1]


def test_load_state_dict_rejects_what_is_not_a_state_dict():
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like, got <class 'list'>."):
        nn.Linear(1, 1).load_state_dict([])
    with pytest.raises(RuntimeError, match='While copying the parameter named "weight"'):
        nn.Linear(1, 1).load_state_dict({"weight": "zeros", "bias": np.zeros(1)})


# ---------------------------------------------------------------------- attribute rules
def _assign_tensor_to_parameter(lib, tensor):
    lin = lib.Linear(2, 2)
    lin.weight = lin.weight * 2


def _before_init(kind):
    def build(lib, tensor):
        class Broken(lib.Module):
            def __init__(self):
                value = lib.Parameter(tensor(np.ones(1, np.float32))) if kind == "parameter" else lib.ReLU()
                self.w = value

        Broken()

    return build


def _deleted(lib, tensor):
    lin = lib.Linear(2, 2)
    del lin.bias
    return lin.bias


def _delete_unknown(lib, tensor):
    del lib.Linear(2, 2).nothing


ERRORS = {
    "assign_tensor_to_parameter": _assign_tensor_to_parameter,
    "assign_int_to_parameter": lambda lib, t: setattr(lib.Linear(2, 2), "weight", 3),
    "assign_module_to_parameter": lambda lib, t: setattr(lib.Linear(2, 2), "bias", lib.ReLU()),
    "assign_int_to_child": lambda lib, t: setattr(lib.Sequential(lib.ReLU()), "0", 3),
    "setitem_int_to_child": lambda lib, t: lib.Sequential(lib.ReLU()).__setitem__(0, 3),
    "missing_attribute": lambda lib, t: lib.Linear(2, 2).weights,
    "deleted_parameter": _deleted,
    "delete_unknown": _delete_unknown,
    "parameter_before_init": _before_init("parameter"),
    "module_before_init": _before_init("module"),
    "buffer_dotted_name": lambda lib, t: lib.Linear(1, 1).register_buffer("a.b", t(np.zeros(1))),
    "buffer_empty_name": lambda lib, t: lib.Linear(1, 1).register_buffer("", t(np.zeros(1))),
    "buffer_name_not_str": lambda lib, t: lib.Linear(1, 1).register_buffer(3, t(np.zeros(1))),
    "buffer_not_tensor": lambda lib, t: lib.Linear(1, 1).register_buffer("x", 3),
    "buffer_name_taken": lambda lib, t: lib.Linear(1, 1).register_buffer("weight", t(np.zeros(1))),
    "parameter_plain_tensor": lambda lib, t: lib.Linear(1, 1).register_parameter("x", t(np.zeros(1, np.float32))),
    "parameter_dotted_name": lambda lib, t: lib.Linear(1, 1).register_parameter("x.y", None),
    "parameter_name_taken": lambda lib, t: lib.Linear(1, 1).register_parameter("in_features", None),
    "add_module_not_module": lambda lib, t: lib.Linear(1, 1).add_module("x", 3),
    "add_module_dotted_name": lambda lib, t: lib.Linear(1, 1).add_module("x.y", None),
    "add_module_empty_name": lambda lib, t: lib.Linear(1, 1).register_module("", None),
    "add_module_name_taken": lambda lib, t: lib.Linear(1, 1).add_module("weight", None),
    "train_not_bool": lambda lib, t: lib.Linear(1, 1).train("yes"),
    "forward_missing": lambda lib, t: lib.ModuleList([lib.ReLU()])(1),
    "module_list_index": lambda lib, t: lib.ModuleList([lib.ReLU()])[3],
    "module_list_negative_index": lambda lib, t: lib.ModuleList([lib.ReLU()])[-2],
    "module_list_extend_not_iterable": lambda lib, t: lib.ModuleList().extend(3),
    "sequential_index": lambda lib, t: lib.Sequential(lib.ReLU())[3],
    "sequential_insert_index": lambda lib, t: lib.Sequential(lib.ReLU()).insert(5, lib.ReLU()),
    "sequential_add_list": lambda lib, t: lib.Sequential(lib.ReLU()) + [lib.ReLU()],
    "module_dict_key": lambda lib, t: lib.ModuleDict()["x"],
    "module_dict_update_not_iterable": lambda lib, t: lib.ModuleDict().update(3),
    "module_dict_update_bad_pair": lambda lib, t: lib.ModuleDict().update([("a", lib.ReLU(), 1)]),
    "parameter_list_called": lambda lib, t: lib.ParameterList()(1),
    "get_submodule_missing": lambda lib, t: lib.Sequential(lib.Linear(1, 1)).get_submodule("0.inner"),
    "get_submodule_not_module": lambda lib, t: lib.Sequential(lib.Linear(1, 1)).get_submodule("0.weight"),
    "get_parameter_missing": lambda lib, t: lib.Sequential(lib.Linear(1, 1)).get_parameter("0.scale"),
    "get_parameter_not_parameter": lambda lib, t: lib.Sequential(lib.Linear(1, 1)).get_parameter("0"),
    "get_buffer_not_buffer": lambda lib, t: lib.Sequential(lib.Linear(1, 1)).get_buffer("0.weight"),
}

# The same message in PyTorch's words -> in vkml's words.
_TORCH_WORDS = [
    ("torch Tensor", "vkml Tensor"),
    ("torch.", "vkml."),
]


def _torch_words(message: str) -> str:
    for theirs, ours in _TORCH_WORDS:
        message = message.replace(theirs, ours)
    return message


@pytest.mark.parametrize("case", ERRORS)
def test_errors_match_torch(case):
    with pytest.raises(Exception) as expected:
        ERRORS[case](*PT)
    with pytest.raises(Exception) as actual:
        ERRORS[case](*VK)
    assert type(actual.value) is type(expected.value)
    assert str(actual.value) == _torch_words(str(expected.value))


# ---------------------------------------------------------------------- registration by assignment
@pytest.mark.parametrize("lib", [VK, PT], ids=["vkml", "torch"])
def test_assignment_registers_by_type(lib):
    nn_, tensor = lib
    lin = nn_.Linear(2, 3)
    lin.weight = None  # stays registered, as None
    assert "weight" in lin._parameters and lin.weight is None
    assert [n for n, _ in lin.named_parameters()] == ["bias"] and list(lin.state_dict()) == ["bias"]
    lin.weight = nn_.Parameter(tensor(np.ones((3, 2), np.float32)))
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]  # back in its place
    lin.extra = tensor(np.ones(2, np.float32))  # a plain tensor on a new name: a plain attribute
    assert "extra" not in dict(lin.named_parameters()) and "extra" not in dict(lin.named_buffers())
    lin.extra = nn_.Parameter(tensor(np.ones(2, np.float32)))  # now a parameter, not an attribute too
    assert "extra" in lin._parameters and "extra" not in lin.__dict__
    lin.sub = nn_.ReLU()
    assert [n for n, _ in lin.named_children()] == ["sub"]
    lin.sub = None
    assert "sub" in lin._modules and list(lin.children()) == []
    lin.register_buffer("stat", tensor(np.zeros(2, np.float32)))
    lin.stat = None
    assert "stat" in lin._buffers and "stat" not in lin.state_dict()
    lin.stat = tensor(np.ones(2, np.float32))
    assert "stat" in lin.state_dict()
    del lin.stat, lin.extra, lin.sub
    assert "stat" not in lin._buffers and "extra" not in lin._parameters and "sub" not in lin._modules
    assert not hasattr(lin, "stat")


def _public_names(module) -> list[str]:
    return [k for k in dir(module) if k not in dir(type(module)) and not k.startswith("_")]


def test_dir_lists_members_as_torch():
    ours, theirs = _with_containers(*VK), _with_containers(*PT)
    assert _public_names(ours) == _public_names(theirs)
    blocks = _public_names(ours.blocks)
    assert blocks == _public_names(theirs.blocks) and not any(k[0].isdigit() for k in dir(ours.blocks))


def test_get_submodule_parameter_and_buffer():
    net = _with_containers(*VK)
    assert net.get_submodule("") is net and net.get_submodule("blocks.1.fc") is net.blocks[1].fc
    assert net.get_parameter("heads.label.weight") is net.heads["label"].weight
    assert net.get_buffer("blocks.0.running") is net.blocks[0].running


# ---------------------------------------------------------------------- containers
@pytest.mark.parametrize("lib", [VK, PT], ids=["vkml", "torch"])
def test_sequential_editing(lib):
    nn_, _ = lib
    net = nn_.Sequential(OrderedDict(a=nn_.ReLU(), b=nn_.Tanh(), c=nn_.Sigmoid()))
    assert list(net[1:]._modules) == ["b", "c"] and type(net[1:]) is nn_.Sequential
    assert isinstance(net[-1], nn_.Sigmoid) and len(net) == 3
    net.append(nn_.GELU())
    net.extend([nn_.ReLU()])
    assert list(net._modules) == ["a", "b", "c", "3", "4"]
    del net[0]  # renumbers every key, names included, as PyTorch
    assert list(net._modules) == ["0", "1", "2", "3"]
    net.insert(1, nn_.Linear(1, 1))
    assert [type(m).__name__ for m in net] == ["Tanh", "Linear", "Sigmoid", "GELU", "ReLU"]
    assert isinstance(net.pop(1), nn_.Linear) and len(net) == 4
    net[0] = nn_.ReLU()
    both = net + nn_.Sequential(nn_.Tanh())
    assert [type(m).__name__ for m in both] == ["ReLU", "Sigmoid", "GELU", "ReLU", "Tanh"]


@pytest.mark.parametrize("lib", [VK, PT], ids=["vkml", "torch"])
def test_module_list_and_dict_editing(lib):
    nn_, tensor = lib
    layers = nn_.ModuleList([nn_.ReLU(), nn_.Tanh()])
    layers += [nn_.Sigmoid()]
    layers.insert(0, nn_.GELU())
    assert [type(m).__name__ for m in layers] == ["GELU", "ReLU", "Tanh", "Sigmoid"]
    assert [type(m).__name__ for m in layers[1:3]] == ["ReLU", "Tanh"] and isinstance(layers[-1], nn_.Sigmoid)
    del layers[1]
    assert list(layers._modules) == ["0", "1", "2"]
    assert isinstance(layers.pop(0), nn_.GELU) and len(layers) == 2
    layers[1] = nn_.ReLU()
    assert [type(m).__name__ for m in layers + nn_.ModuleList([nn_.Tanh()])] == ["Tanh", "ReLU", "Tanh"]

    heads = nn_.ModuleDict({"z": nn_.ReLU(), "a": nn_.Tanh()})
    heads.update([("m", nn_.Sigmoid())])
    heads["b"] = nn_.GELU()
    assert list(heads) == ["z", "a", "m", "b"] and list(heads.keys()) == list(heads)
    assert "m" in heads and isinstance(heads.pop("m"), nn_.Sigmoid) and "m" not in heads
    assert [type(v).__name__ for v in heads.values()] == ["ReLU", "Tanh", "GELU"]
    del heads["z"]
    assert [k for k, _ in heads.items()] == ["a", "b"]
    heads.clear()
    assert len(heads) == 0


@pytest.mark.parametrize("lib", [VK, PT], ids=["vkml", "torch"])
def test_parameter_list_and_dict(lib):
    nn_, tensor = lib
    scales = nn_.ParameterList([tensor(np.ones(2, np.float32))])
    scales.append(nn_.Parameter(tensor(np.zeros(3, np.float32))))
    scales.extend([tensor(np.ones(1, np.float32))])
    assert all(isinstance(p, nn_.Parameter) for p in scales) and len(scales) == 3
    assert [n for n, _ in scales.named_parameters()] == ["0", "1", "2"]
    assert [tuple(p.shape) for p in scales[1:]] == [(3,), (1,)]
    scales[0] = tensor(np.zeros(4, np.float32))
    assert tuple(scales[0].shape) == (4,) and isinstance(scales[0], nn_.Parameter)

    table = nn_.ParameterDict({"b": tensor(np.zeros(2, np.float32)), "a": tensor(np.ones(1, np.float32))})
    table.update(OrderedDict(z=tensor(np.zeros(1, np.float32)), c=tensor(np.zeros(1, np.float32))))
    assert list(table) == ["a", "b", "z", "c"] and [n for n, _ in table.named_parameters()] == list(table)
    assert isinstance(table["a"], nn_.Parameter) and table.get("nope") is None and "z" in table
    table.pop("z")
    del table["a"]
    assert list(table.keys()) == ["b", "c"] and len(table) == 2


# ---------------------------------------------------------------------- modes, grads, conversion
@pytest.mark.parametrize("lib", [VK, PT], ids=["vkml", "torch"])
def test_train_eval_requires_grad_and_zero_grad(lib):
    nn_, tensor = lib
    net = _with_containers(*lib)
    assert net.eval() is net and not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    net.blocks.eval()
    assert net.training and not net.blocks[0].fc.training
    assert net.requires_grad_(False) is net and not any(p.requires_grad for p in net.parameters())
    net.heads["score"].requires_grad_()
    assert [n for n, p in net.named_parameters() if p.requires_grad] == ["heads.score.weight", "heads.score.bias"]
    net.heads["score"](tensor(np.ones((2, 4), np.float32))).sum().backward()
    weight = net.heads["score"].weight
    grad = weight.grad
    net.zero_grad(set_to_none=False)
    assert weight.grad is grad and weight.grad.tolist() == [[0.0] * 4]
    net.zero_grad()
    assert weight.grad is None


def test_to_moves_parameters_buffers_and_grads_in_place(gpu):
    net = _with_containers(*VK)
    params = dict(net.named_parameters())
    values = {k: v.numpy() for k, v in net.state_dict().items()}
    net.blocks[0].fc(vkml.ones(1, 4)).sum().backward()
    grad = net.blocks[0].fc.weight.grad
    assert net.to(gpu) is net
    assert all(p is params[name] and p.device is gpu for name, p in net.named_parameters())
    assert all(b.device is gpu for b in net.buffers()) and net.blocks[0].mask.device is gpu
    moved = net.blocks[0].fc.weight.grad
    assert moved.device is gpu and not moved.requires_grad
    assert_same_bits(moved.numpy(), grad.numpy(), "the gradient moves with its parameter")
    for k, v in net.state_dict().items():
        assert_same_bits(v.numpy(), values[k], k)
    out = net(vkml.tensor([[1, 2]], device=gpu))
    assert out.device is gpu
    net.to(device=CPU, dtype=vkml.float16)
    assert all(p.dtype is vkml.float16 and p.device is CPU for p in params.values())
    assert net.blocks[0].running.dtype is vkml.float16 and net.blocks[0].steps.dtype is vkml.int64
    net.float()
    assert net.blocks[0].running.dtype is vkml.float32 and net.embed.weight.dtype is vkml.float32
    net.half()
    assert net.embed.weight.dtype is vkml.float16
    net.to(vkml.zeros(1, device=gpu))  # a tensor's device and dtype
    assert net.embed.weight.device is gpu and net.embed.weight.dtype is vkml.float32
    with pytest.raises(
        TypeError, match="only accepts floating point or complex dtypes, but got desired dtype=vkml.int32"
    ):
        net.to(vkml.int32)
    net.double()
    assert net.embed.weight.dtype is vkml.float64 and net.blocks[0].steps.dtype is vkml.int64
    net.bfloat16()
    assert net.embed.weight.dtype is vkml.bfloat16 and net.embed.weight.device is gpu


# ---------------------------------------------------------------------- forward hooks
@pytest.mark.parametrize("lib", [VK, PT], ids=["vkml", "torch"])
def test_forward_hooks(lib):
    nn_, tensor = lib
    calls = []

    class Double(nn_.Module):
        def forward(self, x):
            calls.append("forward")
            return x * 2

    net = Double()
    pre = net.register_forward_pre_hook(lambda m, args: calls.append("pre") or (args[0] + 1,))
    net.register_forward_pre_hook(lambda m, args: calls.append("first"), prepend=True)
    post = net.register_forward_hook(lambda m, args, out: calls.append("post") or out + 100)
    net.register_forward_hook(lambda m, args, kwargs, out: calls.append(("kw", sorted(kwargs))), with_kwargs=True)
    assert net(tensor([1.0])).tolist() == [104.0]
    assert calls == ["first", "pre", "forward", "post", ("kw", [])]
    pre.remove()
    with post:
        pass  # a handle removes its hook at the end of a with block
    assert net(tensor([1.0])).tolist() == [2.0]


@pytest.mark.parametrize("lib", [VK, PT], ids=["vkml", "torch"])
def test_always_called_forward_hook_sees_a_failed_forward(lib):
    nn_, tensor = lib
    seen = []

    class Failing(nn_.Module):
        def forward(self, x):
            raise ValueError("bad input")

    net = Failing()
    net.register_forward_hook(lambda m, args, out: seen.append(("always", out)), always_call=True)
    net.register_forward_hook(lambda m, args, out: seen.append(("normal", out)))
    net.register_forward_hook(lambda m, args, out: 1 / 0, always_call=True)
    with pytest.warns(UserWarning, match="silenced as another error was raised in forward: division by zero"):
        with pytest.raises(ValueError, match="bad input"):
            net(tensor([1.0]))
    assert seen == [("always", None)]
