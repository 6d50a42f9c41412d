"""A table-driven sweep of modules and optimizers in the manner of PyTorch's own suites
(``common_modules.module_db`` with its ModuleInfo sample inputs, ``common_optimizers.optim_db`` with
its OptimizerInfo option sets): each case builds the same thing in torch and in vkml and compares.

A module case (``check_module``): the constructor text is evaluated with ``m.nn.`` in front, once per
library; torch's state is copied into the vkml module, then

- the structure: ``repr`` (``torch.`` read as ``vkml.``), ``state_dict`` keys, shapes and dtypes, the
  names and classes of ``named_modules``, the names of ``named_parameters`` and ``named_buffers``;
- forward in ``train()`` and in ``eval()``: every output (tests/peer_sweep.py's ``_close``), the
  gradients of ``sum(out * w)`` for the inputs and for every parameter, the buffers after the call
  (running statistics); a random module (dropout) compares shapes in train mode only;
- more inputs (``extra``): a zero batch, an unbatched input, a wrong rank; where torch raises, vkml
  raises an instance of torch's class;
- the constructor with ``dtype=float64`` added (module_db's test_factory_kwargs): every state entry's dtype;
- ``.double()``, ``.half()``, ``.bfloat16()``, ``.to(float64)``, ``.double().float()``: the dtypes of
  every state entry.

An optimizer case (``check_optimizer``): the same parameters and gradients, five steps, then the
parameters (assert_close's default tolerances), ``state_dict()`` (keys, ``step`` as a tensor, values),
a state_dict loaded across the libraries and stepped again, ``add_param_group`` and ``zero_grad``. Where
torch's constructor raises, vkml raises torch's class with torch's message.

A scheduler case (``check_scheduler``): ``get_last_lr()`` for ten epochs, ``state_dict()`` (keys and
values), and a state_dict round trip.
"""

from __future__ import annotations

import copy
import inspect
import warnings

import numpy as np
import torch
from peer_sweep import _close, _flat, make_inputs

import vkml

# --------------------------------------------------------------------------------------------- modules


class ModCase:
    """``ctor``: text after ``m.nn.`` (``"Linear(3, 4, bias=False)"``); ``inputs``: peer_sweep specs of
    the forward arguments; ``extra``: more input lists, each run in eval mode (zero batch, unbatched,
    wrong rank); ``random``: train-mode outputs are random (compare shapes only); ``grad``: compare
    gradients; ``kwargs``: keyword arguments of forward (text, evaluated with ``m``); ``prep``: text of
    a function ``(m, *inputs) -> inputs`` applied before the call (CTCLoss takes log-probabilities);
    ``lazy``: a Lazy* module, shaped by a first call before its state is compared and copied."""

    def __init__(self, ctor, inputs, extra=(), random=False, grad=True, kwargs=None, name=None, prep=None, lazy=False):
        self.lazy = lazy
        self.ctor, self.inputs, self.extra = ctor, inputs, list(extra)
        self.random, self.grad, self.kwargs, self.prep = random, grad, kwargs, prep
        self.name = name or ctor

    def build(self, m):
        return eval("m.nn." + self.ctor, {"m": m})  # noqa: S307 - the table's own text

    def forward_kwargs(self, m):
        return {} if self.kwargs is None else eval(self.kwargs, {"m": m})  # noqa: S307


def _vk(t):
    return vkml.tensor(t.detach().cpu().numpy().copy())


def copy_state(tmod, vmod):
    """torch's parameters and buffers into the vkml module (same keys, checked by the caller)."""
    vmod.load_state_dict({k: _vk(v) for k, v in tmod.state_dict().items()})


def _dt(t):
    return str(t.dtype).split(".")[-1]


def structure(mod):
    sd = mod.state_dict()
    return {
        "state": [(k, _dt(v), tuple(v.shape)) for k, v in sd.items()],
        "modules": [(n, type(s).__name__) for n, s in mod.named_modules()],
        "parameters": [n for n, _ in mod.named_parameters()],
        "buffers": [n for n, _ in mod.named_buffers()],
    }


def _raises(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(), None
        except Exception as e:  # noqa: BLE001 - the class is compared with torch's
            return None, e


def _same_error(name, w_err, g_err):
    if w_err is None:
        if g_err is not None:
            raise AssertionError(f"{name}: vkml raises {type(g_err).__name__}: {g_err}") from g_err
        return False
    assert g_err is not None, f"{name}: torch raises {type(w_err).__name__}: {w_err}; vkml does not"
    assert isinstance(g_err, type(w_err)), (
        f"{name}: torch raises {type(w_err).__name__}: {w_err}; vkml {type(g_err).__name__}: {g_err}"
    )
    return True


def _forward(m, mod, case, specs, device, grad):
    """``(outputs, input grads, parameter grads)`` of one call, or raise."""
    inputs = make_inputs(m, specs, device)
    mod.zero_grad(set_to_none=True)
    args = inputs if case.prep is None else eval(case.prep)(m, *inputs)  # noqa: S307
    out = mod(*args, **case.forward_kwargs(m))
    flat = _flat(out)
    for o in flat:
        if isinstance(o, m.Tensor):
            o.detach().cpu().numpy()  # a lazy library may check values when it computes them
    if not grad:
        return flat, None, None
    diff = [o for o in flat if isinstance(o, m.Tensor) and o.requires_grad and o.is_floating_point() and o.numel()]
    if not diff:
        return flat, None, None
    loss = 0
    for o in diff:
        w = np.linspace(-1.0, 2.0, o.numel()).reshape(tuple(o.shape))
        loss = loss + (o * m.tensor(w, dtype=o.dtype, device=o.device)).sum()
    loss.backward()
    in_grads = [t.grad for t in inputs if isinstance(t, m.Tensor) and t.requires_grad]
    p_grads = [(n, p.grad) for n, p in mod.named_parameters()]
    return flat, in_grads, p_grads


def _compare_call(name, case, tmod, vmod, specs, device, grad, values=True):
    w, w_err = _raises(lambda: _forward(torch, tmod, case, specs, None, grad))
    g, g_err = _raises(lambda: _forward(vkml, vmod, case, specs, device, grad))
    if _same_error(name, w_err, g_err):
        return
    w_out, w_in, w_p = w
    g_out, g_in, g_p = g
    assert len(g_out) == len(w_out), f"{name}: {len(g_out)} outputs vs torch {len(w_out)}"
    for k, (a, b) in enumerate(zip(g_out, w_out, strict=True)):
        if values or not isinstance(b, torch.Tensor):
            _close(a, b, f"{name} output {k}")
        else:
            assert tuple(a.shape) == tuple(b.shape) and _dt(a) == _dt(b), f"{name} output {k}: {a.shape} vs {b.shape}"
    if not values or w_in is None:
        return
    compare_grads(name, g_in, w_in, g_p, w_p)


def compare_grads(name, g_in, w_in, g_p, w_p):
    """vkml's input gradients ``g_in`` and (name, grad) parameter gradients ``g_p`` against torch's
    ``w_in`` and ``w_p``: None on both sides or close; a sparse gradient sparse on both, compared dense."""
    assert g_in is not None, f"{name}: vkml's output does not require grad"
    for k, (a, b) in enumerate(zip(g_in, w_in, strict=True)):
        assert (a is None) == (b is None), f"{name}: input grad {k} is None on one side only"
        if b is not None:
            _close(a, b, f"{name} input grad {k}")
    for (n, a), (_, b) in zip(g_p, w_p, strict=True):
        assert (a is None) == (b is None), f"{name}: {n}.grad is None on one side only"
        if b is not None:
            assert a.is_sparse == b.is_sparse, f"{name}: {n}.grad sparse {a.is_sparse}, torch's {b.is_sparse}"
            _close(a.to_dense() if a.is_sparse else a, b.to_dense() if b.is_sparse else b, f"{name} {n}.grad")


# vkml prints the normalization layers' ``bias=`` as PyTorch 2.13 does; PyTorch before it printed no
# ``bias=`` (the GPU machine's 2.11), so there the comparison reads vkml's repr without it.
_NORM_REPR_HAS_BIAS = "bias=" in repr(torch.nn.GroupNorm(2, 4))


def _repr(module) -> str:
    text = repr(module)
    return text if _NORM_REPR_HAS_BIAS else text.replace(", bias=True", "")


def check_module(case: ModCase, device=None):
    name = case.name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        tmod, w_err = _raises(lambda: case.build(torch))
        vmod, g_err = _raises(lambda: case.build(vkml))
    if _same_error(name + " constructor", w_err, g_err):
        return
    assert _repr(vmod) == repr(tmod).replace("torch.", "vkml."), f"{name}: repr\n{vmod!r}\nvs torch\n{tmod!r}"
    if case.lazy:  # the first call gives the parameters their shapes and the module its final class
        for m, mod in ((torch, tmod), (vkml, vmod)):
            with m.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mod(*make_inputs(m, case.inputs))
        assert type(vmod).__name__ == type(tmod).__name__, f"{name}: became {type(vmod).__name__}"
        assert _repr(vmod) == repr(tmod).replace("torch.", "vkml."), f"{name}: repr\n{vmod!r}\nvs torch\n{tmod!r}"
    ws, gs = structure(tmod), structure(vmod)
    for key in ws:
        assert gs[key] == ws[key], f"{name}: {key} {gs[key]} vs torch {ws[key]}"
    copy_state(tmod, vmod)
    if device is not None:
        vmod.to(device)
    for mode in ("train", "eval") if case.inputs is not None else ():
        getattr(tmod, mode)()
        getattr(vmod, mode)()
        assert vmod.training == tmod.training
        values = not (case.random and mode == "train")
        _compare_call(f"{name} {mode}", case, tmod, vmod, case.inputs, device, case.grad, values)
        if values:
            for (n, a), (_, b) in zip(vmod.named_buffers(), tmod.named_buffers(), strict=True):
                _close(a, b, f"{name} {mode}: buffer {n} after forward")
    for k, specs in enumerate(case.extra):
        _compare_call(f"{name} extra {k} {specs}", case, tmod, vmod, specs, device, case.grad)
    if "dtype" in inspect.signature(type(tmod).__init__).parameters and "dtype=" not in case.ctor:
        # module_db's test_factory_kwargs: dtype= reaches every parameter and float buffer
        head, args = case.ctor.split("(", 1)
        ctor = f"{head}({args[:-1]}{', ' if args[:-1].strip() else ''}dtype=m.float64)"
        built = []
        for m in (torch, vkml):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                built.append(eval("m.nn." + ctor, {"m": m}))  # noqa: S307 - the table's own text
        t2, v2 = built
        want = [(k, _dt(v)) for k, v in t2.state_dict().items()]
        got = [(k, _dt(v)) for k, v in v2.state_dict().items()]
        assert got == want, f"{name}: dtype=float64 gives {got}, torch {want}"
    if device is None and not case.lazy:
        for conv in ("double", "half", "bfloat16", "to64", "double_float"):
            t2, v2 = case.build(torch), case.build(vkml)
            if conv == "to64":
                t2, v2 = t2.to(torch.float64), v2.to(vkml.float64)
            elif conv == "double_float":
                t2, v2 = t2.double().float(), v2.double().float()
            else:
                t2, v2 = getattr(t2, conv)(), getattr(v2, conv)()
            want = [(k, _dt(v)) for k, v in t2.state_dict().items()]
            got = [(k, _dt(v)) for k, v in v2.state_dict().items()]
            assert got == want, f"{name}: .{conv}() dtypes {got} vs torch {want}"


# ------------------------------------------------------------------------------------------ optimizers

_P0 = [
    np.linspace(-1.0, 1.5, 6, dtype=np.float32).reshape(2, 3),
    np.array([0.5, -0.25, 2.0], dtype=np.float32),
]


def _grads(step):
    rng = np.random.default_rng(100 + step)
    return [rng.standard_normal(p.shape).astype(np.float32) for p in _P0]


class OptCase:
    """``cls``: the optimizer's name in ``m.optim``; ``kwargs``: text evaluated with ``m``."""

    def __init__(self, cls, kwargs="{}", name=None, steps=5):
        self.cls, self.kwargs, self.steps = cls, kwargs, steps
        self.name = name or f"{cls}({kwargs[1:-1]})"

    def build(self, m, params):
        kw = eval(self.kwargs, {"m": m})  # noqa: S307 - the table's own text
        return getattr(m.optim, self.cls)(params, **kw)


def _params(m):
    return [m.tensor(p.copy()).requires_grad_(True) for p in _P0]


def _closure_for(m, params, step):
    """LBFGS calls its closure many times: a fixed quadratic loss whose gradients depend on the step."""
    targets = [m.tensor(g) for g in _grads(step)]

    def closure():
        for p in params:
            p.grad = None
        loss = sum(((p - t) ** 2).sum() for p, t in zip(params, targets, strict=True))
        loss.backward()
        return loss

    return closure


def _run_steps(m, opt, params, steps, first=0):
    for s in range(first, first + steps):
        if opt.__class__.__name__ == "LBFGS":
            opt.step(_closure_for(m, params, s))
            continue
        for p, g in zip(params, _grads(s), strict=True):
            p.grad = m.tensor(g)
        opt.step()


def _state_items(sd):
    """``[(param index, key, value)]`` in order, and the param_groups without their params."""
    rows = []
    for idx in sorted(sd["state"]):
        for key, val in sd["state"][idx].items():
            rows.append((idx, key, val))
    groups = [{k: v for k, v in g.items() if k != "params"} for g in sd["param_groups"]]
    return rows, groups, [g["params"] for g in sd["param_groups"]]


def _close_value(a, b, what):
    if isinstance(b, torch.Tensor):
        _close(a, b, what)
    elif isinstance(b, (list, tuple)) and b and isinstance(b[0], torch.Tensor):
        assert len(a) == len(b), f"{what}: {len(a)} vs torch {len(b)}"
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            assert (x is None) == (y is None), f"{what}[{k}]: {x!r} vs torch {y!r}"
            if y is not None:
                _close(x, y, f"{what}[{k}]")
    elif isinstance(b, float) and isinstance(a, float):
        assert abs(a - b) <= 1e-6 * max(1.0, abs(b)), f"{what}: {a} vs torch {b}"
    else:
        assert a == b, f"{what}: {a!r} vs torch {b!r}"


def _compare_state(name, g_sd, w_sd):
    g_rows, g_groups, g_ids = _state_items(g_sd)
    w_rows, w_groups, w_ids = _state_items(w_sd)
    assert [(i, k) for i, k, _ in g_rows] == [(i, k) for i, k, _ in w_rows], (
        f"{name}: state keys {[(i, k) for i, k, _ in g_rows]} vs torch {[(i, k) for i, k, _ in w_rows]}"
    )
    assert g_ids == w_ids, f"{name}: param ids {g_ids} vs torch {w_ids}"
    for (i, k, a), (_, _, b) in zip(g_rows, w_rows, strict=True):
        assert isinstance(a, vkml.Tensor) == isinstance(b, torch.Tensor), (
            f"{name}: state[{i}][{k!r}] is {type(a).__name__}, torch's {type(b).__name__}"
        )
        _close_value(a, b, f"{name}: state[{i}][{k!r}]")
    assert len(g_groups) == len(w_groups)
    for gg, wg in zip(g_groups, w_groups, strict=True):
        assert list(gg) == list(wg), f"{name}: param_group keys {list(gg)} vs torch {list(wg)}"
        for key in wg:
            _close_value(gg[key], wg[key], f"{name}: param_group[{key!r}]")


def _to_vkml_state(sd):
    def conv(v):
        if isinstance(v, torch.Tensor):
            return _vk(v)
        if isinstance(v, list) and v and isinstance(v[0], torch.Tensor):
            return [None if x is None else _vk(x) for x in v]
        return v

    return {
        "state": {i: {k: conv(v) for k, v in s.items()} for i, s in sd["state"].items()},
        "param_groups": [{k: conv(v) for k, v in g.items()} for g in sd["param_groups"]],
    }


def check_optimizer(case: OptCase):
    name = case.name
    tp, vp = _params(torch), _params(vkml)
    topt, w_err = _raises(lambda: case.build(torch, tp))
    vopt, g_err = _raises(lambda: case.build(vkml, vp))
    if _same_error(name + " constructor", w_err, g_err):
        # PyTorch's argument checks are short fixed texts ("Invalid learning rate: -0.1"): the same
        assert str(g_err) == str(w_err), f"{name}: vkml says {g_err}, torch {w_err}"
        return
    _, w_err = _raises(lambda: _run_steps(torch, topt, tp, case.steps))
    _, g_err = _raises(lambda: _run_steps(vkml, vopt, vp, case.steps))
    if _same_error(name + " step", w_err, g_err):
        return
    for k, (a, b) in enumerate(zip(vp, tp, strict=True)):
        _close(a.detach(), b.detach(), f"{name}: parameter {k} after {case.steps} steps")
    w_sd, g_sd = topt.state_dict(), vopt.state_dict()
    _compare_state(name, g_sd, w_sd)
    # torch's state loaded into a fresh vkml optimizer: the next steps agree
    vp2 = [vkml.tensor(p.detach().numpy().copy()).requires_grad_(True) for p in tp]
    vopt2 = case.build(vkml, vp2)
    vopt2.load_state_dict(_to_vkml_state(copy.deepcopy(w_sd)))
    _run_steps(torch, topt, tp, 2, first=case.steps)
    _run_steps(vkml, vopt2, vp2, 2, first=case.steps)
    for k, (a, b) in enumerate(zip(vp2, tp, strict=True)):
        _close(a.detach(), b.detach(), f"{name}: parameter {k} after torch's state was loaded")
    _compare_state(name + " (loaded)", vopt2.state_dict(), topt.state_dict())
    # add_param_group, then zero_grad both ways
    for m, opt in ((torch, topt), (vkml, vopt2)):
        opt.add_param_group({"params": [m.ones(2, requires_grad=True)], "lr": 0.5})
    _compare_state(name + " (added group)", vopt2.state_dict(), topt.state_dict())
    for set_to_none in (False, True):
        for m, opt in ((torch, topt), (vkml, vopt2)):
            for group in opt.param_groups:
                for p in group["params"]:
                    p.grad = m.ones_like(p)
            opt.zero_grad(set_to_none=set_to_none)
        for a, b in zip(vopt2.param_groups[0]["params"], topt.param_groups[0]["params"], strict=True):
            assert (a.grad is None) == (b.grad is None), f"{name}: zero_grad({set_to_none})"
            if b.grad is not None:
                _close(a.grad, b.grad, f"{name}: zero_grad(set_to_none={set_to_none})")


# ------------------------------------------------------------------------------------------ schedulers


class SchedCase:
    """``ctor``: text after ``m.optim.lr_scheduler.`` with ``opt`` the optimizer (and ``S`` the
    scheduler module, for chained ones); ``metric``: ReduceLROnPlateau's step argument per epoch."""

    def __init__(self, ctor, name=None, opt="SGD(params, lr=0.1, momentum=0.9)", epochs=10, metric=False):
        self.ctor, self.opt, self.epochs, self.metric = ctor, opt, epochs, metric
        self.name = name or ctor

    def build(self, m):
        params = [m.zeros(2, requires_grad=True)]
        opt = eval("m.optim." + self.opt, {"m": m, "params": params})  # noqa: S307
        sched = eval("S." + self.ctor, {"m": m, "opt": opt, "S": m.optim.lr_scheduler})  # noqa: S307
        return opt, sched


_METRICS = [1.0, 0.9, 0.9, 0.9, 0.9, 0.95, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8]


def _lrs(m, opt, sched, case, first, epochs):
    out = []
    for e in range(first, first + epochs):
        opt.step()
        if case.metric:
            sched.step(_METRICS[e % len(_METRICS)])
        else:
            sched.step()
        last = sched.get_last_lr() if hasattr(sched, "get_last_lr") else [g["lr"] for g in opt.param_groups]
        out.append([float(x) for x in last])
    return out


def _close_lrs(name, got, want):
    assert len(got) == len(want)
    for e, (a, b) in enumerate(zip(got, want, strict=True)):
        assert np.allclose(a, b, rtol=1e-6, atol=1e-12), f"{name}: epoch {e}: {a} vs torch {b}"


def _plain(sd):
    """A scheduler's state_dict without the objects that differ by library (functions, optimizers)."""
    out = {}
    for k, v in sd.items():
        if k in ("_schedulers",):
            out[k] = [_plain(s) for s in v]
        elif callable(v) or k in ("optimizer", "_get_lr_called_within_step"):
            continue
        elif isinstance(v, torch.Tensor):
            out[k] = v.tolist()
        else:
            out[k] = v
    return out


def _close_plain(what, got, want):
    """Numbers within 1e-9 relative, the rest equal, through dicts and lists."""
    if isinstance(want, dict):
        for key in want:
            _close_plain(f"{what}[{key!r}]", got[key], want[key])
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), f"{what}: {got!r} vs torch {want!r}"
        for k, (a, b) in enumerate(zip(got, want, strict=True)):
            _close_plain(f"{what}[{k}]", a, b)
    elif isinstance(want, float) and isinstance(got, (int, float)):
        assert got == want or abs(got - want) <= 1e-9 * max(1.0, abs(want)), f"{what}: {got!r} vs torch {want!r}"
    else:
        assert got == want, f"{what}: {got!r} vs torch {want!r}"


def check_scheduler(case: SchedCase):
    name = case.name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built_t, w_err = _raises(lambda: case.build(torch))
        built_v, g_err = _raises(lambda: case.build(vkml))
        if _same_error(name + " constructor", w_err, g_err):
            return
        (topt, tsch), (vopt, vsch) = built_t, built_v
        if hasattr(tsch, "get_last_lr"):
            _close_lrs(name + " initial", [vsch.get_last_lr()], [tsch.get_last_lr()])
        want, w_err = _raises(lambda: _lrs(torch, topt, tsch, case, 0, case.epochs))
        got, g_err = _raises(lambda: _lrs(vkml, vopt, vsch, case, 0, case.epochs))
        if _same_error(name + " step", w_err, g_err):
            return
        _close_lrs(name, got, want)
        w_sd, g_sd = tsch.state_dict(), vsch.state_dict()
        wp, gp = _plain(w_sd), _plain(g_sd)
        assert sorted(gp) == sorted(wp), f"{name}: state_dict keys {sorted(gp)} vs torch {sorted(wp)}"
        _close_plain(name + ": state_dict", gp, wp)
        # a fresh scheduler given the state goes on as the first does
        topt2, tsch2 = case.build(torch)
        vopt2, vsch2 = case.build(vkml)
        tsch2.load_state_dict(w_sd)
        vsch2.load_state_dict(g_sd)
        for o2, o in ((topt2, topt), (vopt2, vopt)):
            for g2, g in zip(o2.param_groups, o.param_groups, strict=True):
                g2["lr"] = g["lr"]
        _close_lrs(
            name + " after load_state_dict",
            _lrs(vkml, vopt2, vsch2, case, case.epochs, 3),
            _lrs(torch, topt2, tsch2, case, case.epochs, 3),
        )
