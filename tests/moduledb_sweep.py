"""PyTorch's own module tables run against vkml.nn: ``common_modules.module_db`` (a ModuleInfo per
module class, whose ``module_inputs_func`` gives constructor arguments and forward inputs and whose
``module_error_inputs_func`` gives the inputs that must raise) and ``common_nn``'s ``module_tests`` and
``new_module_tests`` (dicts of a constructor, its arguments and an input size or function; the
functional rows wrap a ``torch.nn.functional`` call, which is re-bound to ``vkml.nn.functional``).

Each sample builds the torch module and the vkml module with the same arguments (tensors through
numpy, torch dtypes as vkml's), then compares as tests/module_sweep.py does (its helpers are reused):
``repr``, the ``state_dict`` keys, dtypes and shapes, the names of ``named_modules``/parameters/buffers;
torch's state is copied into vkml's; forward in the sample's mode (module_db asks for train and for
eval): every output, the gradients of ``sum(out * w)`` for the inputs and the parameters, the buffers
afterwards; a random module (its torch outputs differ between two seeds) compares shapes only. Then
``dtype=float64`` (module_db's test_factory_kwargs) and the error inputs (torch's exception class).

Importing this module imports torch.testing._internal (about 5 s; it needs ``expecttest``): only the
``exhaustive`` tests of tests/test_moduledb_sweep.py use it. From the command line,
``python tests/moduledb_sweep.py [NAME ...]`` prints each failing sample with its first line.
"""

from __future__ import annotations

import copy
import inspect
import sys
import types
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from module_sweep import _dt, _raises, _repr, _same_error, compare_grads, structure
from peer_sweep import _close, _flat
from torch.testing._internal import common_nn
from torch.testing._internal.common_modules import ModuleErrorEnum, module_db

import vkml
import vkml.nn.functional as vkml_functional

# --------------------------------------------------------------------------------- torch -> vkml values


class Unconvertible(Exception):
    """A constructor or forward argument with no vkml counterpart built here (a torch module)."""


def to_vkml(obj, memo=None):
    """A torch value as vkml's: tensors through numpy (the same tensor twice gives one vkml tensor,
    ``requires_grad`` kept), dtypes by name, ``torch.Size`` as ``vkml.Size``, containers walked."""
    memo = {} if memo is None else memo
    if isinstance(obj, torch.Tensor):
        if id(obj) not in memo:
            t = vkml.tensor(obj.detach().cpu().numpy().copy())
            if obj.requires_grad:
                t.requires_grad_(True)
            memo[id(obj)] = t
        return memo[id(obj)]
    if isinstance(obj, torch.dtype):
        return getattr(vkml, str(obj).split(".")[-1])
    if isinstance(obj, torch.device):
        return obj.type
    if isinstance(obj, torch.Size):
        return vkml.Size(obj)
    if isinstance(obj, tuple):
        return tuple(to_vkml(x, memo) for x in obj)
    if isinstance(obj, list):
        return [to_vkml(x, memo) for x in obj]
    if isinstance(obj, dict):
        return {k: to_vkml(v, memo) for k, v in obj.items()}
    if isinstance(obj, torch.nn.Module):
        return _module_to_vkml(obj)
    if isinstance(obj, types.FunctionType) and obj.__module__ == common_nn.__name__:
        return rebind(obj)
    if callable(obj) and getattr(torch.nn.functional, getattr(obj, "__name__", ""), None) is obj:
        return getattr(vkml_functional, obj.__name__)  # an activation= function
    return obj


def _module_to_vkml(mod):
    """A module argument (TransformerEncoder's layer, its norm, an activation module) built in vkml from
    the torch module's attributes; its state comes with the outer module's."""
    name = type(mod).__name__
    if name == "LayerNorm":
        return vkml.nn.LayerNorm(mod.normalized_shape, mod.eps, mod.elementwise_affine, bias=mod.bias is not None)
    if name in ("TransformerEncoderLayer", "TransformerDecoderLayer"):
        return getattr(vkml.nn, name)(
            mod.self_attn.embed_dim,
            mod.self_attn.num_heads,
            dim_feedforward=mod.linear1.out_features,
            dropout=mod.dropout.p,
            activation=to_vkml(mod.activation),
            layer_norm_eps=mod.norm1.eps,
            batch_first=mod.self_attn.batch_first,
            norm_first=mod.norm_first,
            bias=mod.linear1.bias is not None,
        )
    if name in ("ReLU", "GELU", "Tanh", "Sigmoid", "SiLU") and not mod.extra_repr():
        return getattr(vkml.nn, name)()
    raise Unconvertible(f"a {name} argument")


def rebind(fn):
    """``fn`` (a common_nn lambda) with ``torch``, ``nn`` and ``F`` read as vkml's, its captured
    values converted."""
    names = dict(fn.__globals__)
    names.update(torch=vkml, nn=vkml.nn, F=vkml_functional)
    cells = tuple(types.CellType(to_vkml(c.cell_contents)) for c in fn.__closure__ or ())
    bound = types.FunctionType(fn.__code__, names, fn.__name__, fn.__defaults__, cells or None)
    bound.__kwdefaults__ = to_vkml(fn.__kwdefaults__)
    return bound


# ------------------------------------------------------------------------------------------- the cases


@dataclass
class Sample:
    """One constructor + forward input. ``build(m)`` returns the module for ``m`` (torch or vkml);
    ``inputs()`` the torch forward ``(args, kwargs)``, made fresh per call."""

    name: str
    build: Any
    inputs: Any
    training: bool = True
    repr_checked: bool = True
    from_module_db: bool = True  # else common_nn's
    grad_every_float: bool = False  # common_nn's module rows: their plain float inputs get requires_grad here
    dtype: torch.dtype = torch.float32  # the module's and the float inputs' (module_db's m.to(dtype))


def _cls_builder(cls_name, args, kwargs):
    def build(m):
        cls = getattr(m.nn, cls_name)
        if m is torch:
            return cls(*args, **kwargs)
        return cls(*to_vkml(args), **to_vkml(kwargs))

    return build


def _function_input(fi):
    return lambda: (tuple(fi.args), dict(fi.kwargs))


def module_db_samples(names=None, dtype=torch.float32):
    """A Sample per module_db ModuleInfo (whose class vkml.nn has) x sample input x train/eval, for
    ``dtype`` (float32; ``float64`` rows are named ``-float64``)."""
    out = []
    for info in module_db:
        cls_name = info.module_cls.__name__
        if not hasattr(vkml.nn, cls_name) or (names and cls_name not in names):
            continue
        modes = (True, False) if info.train_and_eval_differ else (True,)
        for training in modes:
            torch.manual_seed(0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                inputs = info.module_inputs_func(info, device="cpu", dtype=dtype, requires_grad=True, training=training)
            for k, mi in enumerate(inputs):
                ci = mi.constructor_input
                fi = mi.forward_input
                mode = "train" if training else "eval"
                suffix = "" if dtype == torch.float32 else "-" + str(dtype).split(".")[-1]
                out.append(
                    Sample(
                        f"{info.formatted_name}-{k}-{mode}{suffix}",
                        _cls_builder(cls_name, tuple(ci.args), dict(ci.kwargs)),
                        None if fi is None else _function_input(fi),
                        training,
                        dtype=dtype,
                    )
                )
    return out


def module_db_error_samples(names=None):
    """``(name, build, inputs, on_forward, torch exception class)`` per module_db error input."""
    out = []
    for info in module_db:
        cls_name = info.module_cls.__name__
        if info.module_error_inputs_func is None or not hasattr(vkml.nn, cls_name):
            continue
        if names and cls_name not in names:
            continue
        torch.manual_seed(0)
        errs = info.module_error_inputs_func(
            info, device="cpu", dtype=torch.float32, requires_grad=False, training=True
        )
        for k, e in enumerate(errs):
            mi = e.module_error_input
            ci, fi = mi.constructor_input, mi.forward_input
            out.append(
                (
                    f"{info.formatted_name}-error{k}",
                    _cls_builder(cls_name, tuple(ci.args), dict(ci.kwargs)),
                    None if fi is None else _function_input(fi),
                    e.error_on == ModuleErrorEnum.FORWARD_ERROR,
                )
            )
    return out


def _nn_test_input(test):
    if "input_fn" in test:
        return test["input_fn"]
    if "input" in test:
        value = test["input"]
        return lambda: value
    size = test["input_size"]
    return lambda: torch.randn(size)


def _functional_builder(module_cls):
    """common_nn's wrap_functional class: a vkml module calling the re-bound function."""
    cells = dict(zip(module_cls.forward.__code__.co_freevars, module_cls.forward.__closure__, strict=True))
    fn, kwargs = cells["fn"].cell_contents, cells["kwargs"].cell_contents

    class FunctionalModule(vkml.nn.Module):
        def forward(self, *args):
            return to_vkml(fn)(*args, **to_vkml(kwargs))

    return lambda m: module_cls() if m is torch else FunctionalModule()


def common_nn_samples(names=None):
    """A Sample per module_tests / new_module_tests dict whose module vkml.nn has (by class name, or a
    functional row, or a lambda building torch.nn modules)."""
    out = []
    tests = list(common_nn.module_tests) + list(common_nn.get_new_module_tests())
    for k, test in enumerate(tests):
        ctor = test.get("constructor")
        args = test.get("constructor_args", ())
        repr_checked = True
        if "module_name" in test:
            cls_name = test["module_name"]
            build = _cls_builder(cls_name, tuple(args), {})
        elif isinstance(ctor, type) and ctor.__name__ == "FunctionalModule":
            cls_name = test["fullname"]
            build = _functional_builder(ctor)
            repr_checked = False
        elif isinstance(ctor, type):
            cls_name = ctor.__name__
            build = _cls_builder(cls_name, tuple(args), {})
        else:  # a lambda building modules
            cls_name = test["fullname"]

            def build(m, ctor=ctor, args=args):
                return ctor(*args) if m is torch else rebind(ctor)(*to_vkml(args))

        if "module_name" in test or (isinstance(ctor, type) and ctor.__name__ != "FunctionalModule"):
            if not hasattr(vkml.nn, cls_name):
                continue
        if names and cls_name not in names and not any(n in cls_name for n in names):
            continue
        desc = test.get("desc", "")
        name = test.get("fullname") or f"{cls_name}{'_' + desc if desc else ''}"
        make = _nn_test_input(test)
        inputs = lambda make=make: (_as_args(make()), {})  # noqa: E731 - bound per row
        out.append(
            Sample(
                f"common_nn-{name}-{k}", build, inputs, True, repr_checked, from_module_db=False, grad_every_float=True
            )
        )
    return out


def _criterion_inputs(test):
    """common_nn's criterion rows: (inputs that require grad, one or more, then the target)."""
    make_input = _nn_test_input(test)
    if "target_fn" in test:
        make_target = test["target_fn"]
    else:
        size = test["target_size"]

        def make_target():
            return torch.randn(size)

    def inputs():
        xs = [x.detach().float().requires_grad_(True) if x.is_floating_point() else x for x in _as_args(make_input())]
        return (*xs, make_target()), {}

    return inputs


def common_nn_criterion_samples(names=None):
    """A Sample per common_nn ``criterion_tests`` row (a lambda building a torch.nn loss)."""
    out = []
    for k, test in enumerate(common_nn.criterion_tests):
        name = test["fullname"]
        if names and not any(n in name for n in names):
            continue
        ctor = test["constructor"]

        def build(m, ctor=ctor):
            return ctor() if m is torch else rebind(ctor)()

        out.append(Sample(f"common_nn-{name}-c{k}", build, _criterion_inputs(test), True, from_module_db=False))
    return out


def _as_args(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


# ------------------------------------------------------------------------------------------ comparing


def _prepare(args, kwargs, grad_floats, dtype=torch.float32):
    """The torch side's own copies of the inputs; float ones as float32, leaves that require grad
    where module_db made them so, or every one with ``grad_floats`` (common_nn's inputs are plain)."""
    memo = {}

    def fix(x):
        if isinstance(x, torch.Tensor):
            if id(x) not in memo:
                t = x.detach().clone()
                if t.is_floating_point():
                    # a non-leaf (CTCLoss's log_softmax output) is a plain input here: its graph is not
                    # rebuilt, and a gradient with respect to it is not the derivative torch returns
                    t = t.to(dtype).requires_grad_(grad_floats or (x.requires_grad and x.is_leaf))
                memo[id(x)] = t
            return memo[id(x)]
        if isinstance(x, tuple):
            return tuple(fix(y) for y in x)
        if isinstance(x, list):
            return [fix(y) for y in x]
        if isinstance(x, dict):
            return {k: fix(v) for k, v in x.items()}
        return x

    return fix(args), fix(kwargs)


def _leaves(m, obj):
    return [t for t in _flat(list(obj)) if isinstance(t, m.Tensor) and t.requires_grad and t.is_leaf]


def _call(m, mod, args, kwargs):
    """``(outputs, input grads, parameter grads)`` of one call on ``m``'s side."""
    mod.zero_grad(set_to_none=True)
    out = mod(*args, **kwargs)
    flat = _flat(out)
    for o in flat:
        if isinstance(o, m.Tensor):
            o.detach().cpu().numpy()  # a lazy library may check values when it computes them
    diff = [o for o in flat if isinstance(o, m.Tensor) and o.requires_grad and o.is_floating_point() and o.numel()]
    if not diff:
        return flat, None, None
    loss = 0
    for o in diff:
        w = np.linspace(-1.0, 2.0, o.numel()).reshape(tuple(o.shape))
        loss = loss + (o * m.tensor(w, dtype=o.dtype, device=o.device)).sum()
    loss.backward()
    in_grads = [t.grad for t in _leaves(m, list(args) + list(kwargs.values()))]
    p_grads = [(n, p.grad) for n, p in mod.named_parameters()]
    return flat, in_grads, p_grads


def _torch_is_random(sample, tmod, args, kwargs):
    """Whether torch's outputs differ between two seeds (dropout, RReLU in train mode)."""
    outs = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        with torch.no_grad():
            try:
                outs.append(_flat(copy.deepcopy(tmod)(*copy.deepcopy(args), **copy.deepcopy(kwargs))))
            except Exception:  # noqa: BLE001 - the compared call raises it again
                return False
    for a, b in zip(*outs, strict=True):
        if isinstance(a, torch.Tensor) and a.shape == b.shape and not torch.equal(a.nan_to_num(), b.nan_to_num()):
            return True
    return False


def _build_pair(sample):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        tmod, w_err = _raises(lambda: sample.build(torch))
        vmod, g_err = _raises(lambda: sample.build(vkml))
    if isinstance(g_err, Unconvertible):
        raise g_err
    return tmod, w_err, vmod, g_err


def check_sample(sample: Sample):
    name = sample.name
    tmod, w_err, vmod, g_err = _build_pair(sample)
    if _same_error(name + " constructor", w_err, g_err):
        return
    # module_db's m.to(dtype); common_nn's arguments may be float64
    tmod, vmod = tmod.to(sample.dtype), vmod.to(to_vkml(sample.dtype))
    if sample.repr_checked:
        assert _repr(vmod) == repr(tmod).replace("torch.", "vkml."), f"{name}: repr\n{vmod!r}\nvs torch\n{tmod!r}"
    if sample.inputs is not None and _is_lazy(tmod):
        _shape_lazy(sample, tmod, vmod)
    ws, gs = structure(tmod), structure(vmod)
    for key in ws:
        assert gs[key] == ws[key], f"{name}: {key} {gs[key]} vs torch {ws[key]}"
    vmod.load_state_dict({k: to_vkml(v) for k, v in tmod.state_dict().items()})
    tmod.train(sample.training)
    vmod.train(sample.training)
    if sample.inputs is None:
        return
    torch.manual_seed(0)
    args, kwargs = _prepare(*sample.inputs(), sample.grad_every_float, sample.dtype)
    random = sample.training and _torch_is_random(sample, tmod, args, kwargs)
    memo = {}
    v_args, v_kwargs = to_vkml(args, memo), to_vkml(kwargs, memo)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w, w_err = _raises(lambda: _call(torch, tmod, args, kwargs))
        g, g_err = _raises(lambda: _call(vkml, vmod, v_args, v_kwargs))
    if _same_error(name, w_err, g_err):
        return
    (w_out, w_in, w_p), (g_out, g_in, g_p) = w, g
    assert len(g_out) == len(w_out), f"{name}: {len(g_out)} outputs vs torch {len(w_out)}"
    for k, (a, b) in enumerate(zip(g_out, w_out, strict=True)):
        if random and isinstance(b, torch.Tensor):
            assert tuple(a.shape) == tuple(b.shape) and _dt(a) == _dt(b), f"{name} output {k}: {a.shape} vs {b.shape}"
        else:
            _close(a, b, f"{name} output {k}")
    if random or w_in is None:
        return
    compare_grads(name, g_in, w_in, g_p, w_p)
    for (n, a), (_, b) in zip(vmod.named_buffers(), tmod.named_buffers(), strict=True):
        _close(a, b, f"{name}: buffer {n} after forward")


def _is_lazy(mod):
    return isinstance(mod, torch.nn.modules.lazy.LazyModuleMixin)


def _shape_lazy(sample, tmod, vmod):
    args, kwargs = _prepare(*sample.inputs(), False, sample.dtype)
    with torch.no_grad(), vkml.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tmod(*args, **kwargs)
        vmod(*to_vkml(args), **to_vkml(kwargs))


def check_factory_kwargs(sample: Sample):
    """module_db's test_factory_kwargs: ``dtype=float64`` reaches every parameter and float buffer."""
    tmod, w_err, vmod, g_err = _build_pair(sample)
    if w_err is not None or "dtype" not in inspect.signature(type(tmod).__init__).parameters:
        return
    build = sample.build
    for m in (torch, vkml):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cls = type(tmod) if m is torch else type(vmod)
            built = _rebuild_with(build, m, cls, dtype=m.float64, device="cpu")
        if m is torch:
            want = [(k, _dt(v)) for k, v in built.state_dict().items()]
        else:
            got = [(k, _dt(v)) for k, v in built.state_dict().items()]
    assert got == want, f"{sample.name}: dtype=float64, device='cpu' gives {got}, torch {want}"


def _rebuild_with(build, m, cls, **extra):
    cells = dict(zip(build.__code__.co_freevars, build.__closure__ or (), strict=True))
    args, kwargs = cells["args"].cell_contents, cells["kwargs"].cell_contents
    if m is not torch:
        args, kwargs = to_vkml(args), to_vkml(kwargs)
    return getattr(m.nn, cells["cls_name"].cell_contents)(*args, **{**kwargs, **extra})


def check_error_input(name, build, inputs, on_forward):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        tmod, w_err = _raises(lambda: build(torch))
        vmod, g_err = _raises(lambda: build(vkml))
        if not on_forward or w_err is not None:
            assert w_err is not None, f"{name}: torch's constructor does not raise"
            _same_error(name + " constructor", w_err, g_err)
            return
        assert g_err is None, f"{name}: vkml's constructor raises {g_err!r}"
        args, kwargs = inputs()
        _, w_err = _raises(lambda: tmod(*args, **kwargs))
        _, g_err = _raises(lambda: _flat(vmod(*to_vkml(args), **to_vkml(kwargs)))[0].numpy())
        assert w_err is not None, f"{name}: torch's forward does not raise"
        _same_error(name, w_err, g_err)


def factory_samples(samples):
    """The samples whose constructor test_factory_kwargs checks: module_db's, once (float32)."""
    return [s for s in samples if s.from_module_db and s.dtype == torch.float32]


def all_samples(names=None):
    """module_db's samples in float32 and float64 (its default dtypes on the CPU), common_nn's rows."""
    return (
        module_db_samples(names)
        + module_db_samples(names, torch.float64)
        + common_nn_samples(names)
        + common_nn_criterion_samples(names)
    )


def _main(names):
    failures = 0
    samples = all_samples(set(names) if names else None)
    errors = module_db_error_samples(set(names) if names else None)
    checks = [(s.name, check_sample, (s,)) for s in samples]
    checks += [(s.name + "-factory", check_factory_kwargs, (s,)) for s in factory_samples(samples)]
    checks += [(e[0], check_error_input, e) for e in errors]
    for name, fn, args in checks:
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - a report, one line per failure
            failures += 1
            first = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
            print(f"FAIL {name}: {type(e).__name__}: {first}", flush=True)
    print(f"{failures} of {len(checks)} checks fail")


if __name__ == "__main__":
    _main(sys.argv[1:])
