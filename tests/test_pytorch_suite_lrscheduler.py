"""PyTorch's test/optim/test_lrscheduler.py, run on torch and on vkml side by side.

Each scenario follows one of PyTorch's scheduler tests (value sequences, ``get_last_lr``, state_dict
round trips, chaining, ``last_epoch`` resumes, the warnings, ReduceLROnPlateau's modes, the cyclic
schedules' momentum, ``SequentialLR``, fractional epochs of ``CosineAnnealingWarmRestarts``, tensor
learning rates). Rather than PyTorch's hand-written targets, a scenario records everything it sees
(every group's lr and momentum after each step, what it returns, the exception's class and message,
the warnings' classes and messages) and vkml's record must equal torch's.

The optimizer is the suite's: two groups, the second with a *tensor* lr (``lr=tensor(0.5)``), which a
scheduler must keep a tensor, filled in place (PyTorch's ``_update_param_group_val``).
"""

from __future__ import annotations

import copy
import io
import pickle
import types
import warnings
from functools import partial

import pytest
import torch
from optest import skip_before_pytorch

import vkml


def setup(m, tensor_lr=True):
    net = m.nn.Sequential(m.nn.Conv2d(1, 1, 1), m.nn.Conv2d(1, 1, 1))
    lr2 = m.tensor(0.5) if tensor_lr else 0.5
    opt = m.optim.SGD([{"params": net[0].parameters()}, {"params": net[1].parameters(), "lr": lr2}], lr=0.05)
    return net, opt


def _plain(value):
    """A record's value with tensors as ("T", value) and floats rounded (PyTorch's tests use atol=1e-5; 9 digits
    still tell a float32 tensor lr from a Python float)."""
    if isinstance(value, (torch.Tensor, vkml.Tensor)):
        return ("T", round(float(value.item()), 9))
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def lrs(opt, key="lr"):
    values = [group.get(key) for group in opt.param_groups]
    if key == "betas":
        values = [v[0] if v is not None else None for v in values]
    return _plain(values)


def record(fn, m):
    """What ``fn(m)`` returns or raises, and the warnings it gives."""
    out = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out.append(("returns", _plain(fn(m))))
        except Exception as error:  # the class and message are what is compared
            out.append(("raises", type(error).__name__, str(error)))
    out.append(("warns", [(w.category.__name__, str(w.message)) for w in caught]))
    return out


def S(m):
    return m.optim.lr_scheduler


SC = {}


def sc(f):
    SC[f.__name__] = f
    return f


def _steps(m, make, n=12, opt_first=True, epoch_arg=False, **kw):
    net, opt = setup(m, **kw)
    s = make(m, opt)
    tr = [lrs(opt), s.get_last_lr() if hasattr(s, "get_last_lr") else None]
    for e in range(n):
        if opt_first:
            opt.step()
        if epoch_arg:
            s.step(e)
        else:
            s.step()
        if not opt_first:
            opt.step()
        tr.append(lrs(opt))
        tr.append(
            [round(float(x), 9) if not hasattr(x, "item") else ("T", round(float(x), 9)) for x in s.get_last_lr()]
        )
    return tr


makers = {
    "step": lambda m, o: S(m).StepLR(o, gamma=0.1, step_size=3),
    "multistep": lambda m, o: S(m).MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9]),
    "const": lambda m, o: S(m).ConstantLR(o, factor=0.5, total_iters=5),
    "const_default": lambda m, o: S(m).ConstantLR(o),
    "linear": lambda m, o: S(m).LinearLR(o, start_factor=0.25, end_factor=0.6, total_iters=4),
    "linear_default": lambda m, o: S(m).LinearLR(o),
    "exp": lambda m, o: S(m).ExponentialLR(o, gamma=0.9),
    "poly": lambda m, o: S(m).PolynomialLR(o, power=0.9, total_iters=5),
    "poly_default": lambda m, o: S(m).PolynomialLR(o),
    "cos": lambda m, o: S(m).CosineAnnealingLR(o, T_max=10, eta_min=1e-10),
    "lambda_list": lambda m, o: S(m).LambdaLR(o, lr_lambda=[lambda x: 0.9**x, lambda x: 0.8**x]),
    "mult_list": lambda m, o: S(m).MultiplicativeLR(o, lr_lambda=[lambda x: 0.9, lambda x: 0.8]),
    "cawr1": lambda m, o: S(m).CosineAnnealingWarmRestarts(o, T_0=10, T_mult=1, eta_min=1e-10),
    "cawr2": lambda m, o: S(m).CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=1e-10),
    "cyc_tri": lambda m, o: S(m).CyclicLR(
        o, base_lr=1, max_lr=5, step_size_up=4, cycle_momentum=True, base_momentum=1, max_momentum=5
    ),
    "cyc_tri_nomom": lambda m, o: S(m).CyclicLR(o, base_lr=1, max_lr=5, step_size_up=4, cycle_momentum=False),
    "cyc_tri2_list": lambda m, o: S(m).CyclicLR(
        o,
        base_lr=[1, 3],
        max_lr=[5, 7],
        step_size_up=2,
        step_size_down=6,
        base_momentum=[1, 3],
        max_momentum=[5, 7],
        mode="triangular2",
    ),
    "cyc_exp": lambda m, o: S(m).CyclicLR(
        o,
        base_lr=1,
        max_lr=5,
        step_size_up=2,
        step_size_down=6,
        base_momentum=1,
        max_momentum=5,
        mode="exp_range",
        gamma=0.9,
    ),
    "cyc_scalefn": lambda m, o: S(m).CyclicLR(
        o, base_lr=1, max_lr=5, step_size_up=2, scale_fn=lambda x: 0.5, scale_mode="iterations"
    ),
    "onecycle_lin": lambda m, o: S(m).OneCycleLR(
        o, max_lr=25, final_div_factor=2, base_momentum=1, max_momentum=22, total_steps=13, anneal_strategy="linear"
    ),
    "onecycle_3p": lambda m, o: S(m).OneCycleLR(
        o,
        max_lr=25,
        div_factor=25,
        base_momentum=1,
        max_momentum=22,
        total_steps=13,
        anneal_strategy="linear",
        pct_start=0.4,
        final_div_factor=4,
        three_phase=True,
    ),
    "onecycle_cos": lambda m, o: S(m).OneCycleLR(
        o, max_lr=25, final_div_factor=2, base_momentum=1, max_momentum=22, total_steps=13
    ),
    "onecycle_nomom": lambda m, o: S(m).OneCycleLR(o, max_lr=[2, 3], epochs=2, steps_per_epoch=7, cycle_momentum=False),
    "seq1": lambda m, o: S(m).SequentialLR(
        o, schedulers=[S(m).ExponentialLR(o, gamma=0.8), S(m).StepLR(o, gamma=0.1, step_size=4)], milestones=[3]
    ),
    "seq3": lambda m, o: S(m).SequentialLR(
        o,
        schedulers=[
            S(m).ConstantLR(o, factor=0.1, total_iters=3),
            S(m).ExponentialLR(o, gamma=0.8),
            S(m).StepLR(o, gamma=0.1, step_size=2),
        ],
        milestones=[3, 6],
    ),
    "seq_chain": lambda m, o: S(m).SequentialLR(
        o,
        schedulers=[
            S(m).ChainedScheduler(
                [S(m).LinearLR(o, start_factor=0.1, total_iters=5), S(m).ConstantLR(o, factor=0.1, total_iters=5)]
            ),
            S(m).ConstantLR(o, factor=0.5, total_iters=5),
        ],
        milestones=[5],
    ),
    "chain3": lambda m, o: S(m).ChainedScheduler(
        [
            S(m).ExponentialLR(o, gamma=0.9),
            S(m).ConstantLR(o, factor=0.2, total_iters=4),
            S(m).StepLR(o, gamma=0.1, step_size=3),
        ]
    ),
    "chain_poly_const": lambda m, o: S(m).ChainedScheduler(
        [S(m).PolynomialLR(o, power=0.9, total_iters=5), S(m).ConstantLR(o, factor=0.1)]
    ),
    "swalr_cos": lambda m, o: m.optim.swa_utils.SWALR(o, anneal_epochs=5, swa_lr=0.01),
    "swalr_lin": lambda m, o: m.optim.swa_utils.SWALR(
        o, anneal_epochs=4, anneal_strategy="linear", swa_lr=[0.01, 0.02]
    ),
    "swalr_noanneal": lambda m, o: m.optim.swa_utils.SWALR(o, anneal_epochs=1, swa_lr=0.01),
}
# the exhaustive run's: every schedule stepped in the old order, and with float lrs only
SLOW = {}
# schedules whose tensor-lr path is another's (the decay schedules share LRScheduler.step): exhaustive only
_SAME_PATH = {
    "multistep",
    "const",
    "const_default",
    "linear_default",
    "poly_default",
    "lambda_list",
    "mult_list",
    "cawr1",
}
_SAME_PATH |= {"seq3", "chain_poly_const", "onecycle_3p", "cyc_scalefn", "cyc_exp"}
for k, mk in makers.items():
    (SLOW if k in _SAME_PATH else SC)["seq_" + k] = partial(_steps, make=mk)
    # scheduler.step() before optimizer.step(): the warning
    (SC if k in ("step", "cyc_tri", "seq1") else SLOW)["seqold_" + k] = partial(_steps, make=mk, opt_first=False, n=3)
    (SC if k in ("cos", "onecycle_cos", "swalr_cos") else SLOW)["seqfloat_" + k] = partial(
        _steps, make=mk, tensor_lr=False
    )
for k in ["step", "multistep", "const", "linear", "exp", "poly", "cos", "cawr2", "const_default", "linear_default"]:
    SC["epoch_" + k] = partial(_steps, make=makers[k], epoch_arg=True)


def compound(names):
    def f(m):
        net, opt = setup(m)
        ss = [makers[n](m, opt) for n in names]
        tr = []
        for _e in range(11):
            tr.append(lrs(opt))
            opt.step()
            for s in ss:
                s.step()
        return tr

    return f


for pair in [
    ("step", "multistep"),
    ("step", "exp"),
    ("multistep", "exp"),
    ("linear", "exp"),
    ("step", "const"),
    ("multistep", "linear"),
    ("cos", "step"),
    ("cos", "multistep"),
    ("linear", "cos"),
    ("cos", "exp"),
]:
    SC["compound_" + "_".join(pair)] = compound(pair)


def plateau(kw, metrics, extra=None):
    def f(m):
        net, opt = setup(m)
        for g in opt.param_groups:
            g["lr"] = 0.5
        s = S(m).ReduceLROnPlateau(opt, **kw)
        other = makers[extra](m, opt) if extra else None
        tr = [s.get_last_lr()]
        for x in metrics:
            opt.step()
            s.step(x)
            if other:
                other.step()
            tr.append(lrs(opt))
            tr.append((s.best, s.num_bad_epochs, s.cooldown_counter, s.last_epoch))
        return tr

    return f


SC["plateau1"] = plateau(
    dict(threshold_mode="abs", mode="min", threshold=0.01, patience=5, cooldown=5), [10 - i * 0.0167 for i in range(20)]
)
SC["plateau2"] = plateau(
    dict(patience=5, cooldown=0, threshold_mode="abs", mode="min", threshold=0.1), [10 - i * 0.0165 for i in range(22)]
)
SC["plateau3"] = plateau(dict(mode="max", patience=5, cooldown=5, threshold_mode="abs"), [-0.8] * 2 + [-0.234] * 20)
SC["plateau4"] = plateau(
    dict(mode="max", patience=3, threshold_mode="rel", threshold=0.1), [1.5 * (1.025**i) for i in range(20)]
)
SC["plateau5"] = plateau(
    dict(mode="max", threshold_mode="rel", threshold=0.1, patience=5, cooldown=5), [1.5 * (1.005**i) for i in range(20)]
)
SC["plateau6"] = plateau(dict(mode="min", threshold_mode="rel", threshold=0.1), [1.5 * (0.85**i) for i in range(20)])
SC["plateau7"] = plateau(
    dict(mode="min", threshold_mode="rel", threshold=0.1, patience=5, cooldown=5), [1] * 7 + [0.6] + [0.5] * 12
)
SC["plateau8"] = plateau(
    dict(mode="max", threshold_mode="rel", min_lr=[0.4, 0.3], threshold=0.1, patience=5, cooldown=5),
    [1.5 * (1.005**i) for i in range(20)],
)
SC["plateau_eps"] = plateau(dict(mode="min", factor=0.999999, patience=0, eps=1e-3), [1.0] * 6)
SC["plateau_c1"] = plateau(
    dict(threshold_mode="abs", mode="min", threshold=0.01, patience=5, cooldown=5),
    [10 - i * 0.0167 for i in range(20)],
    "step",
)
SC["plateau_c2"] = plateau(
    dict(patience=5, cooldown=0, threshold_mode="abs", mode="min", threshold=0.1),
    [10 - i * 0.0165 for i in range(22)],
    "multistep",
)
SC["plateau_c4"] = plateau(
    dict(mode="max", patience=3, threshold_mode="rel", threshold=0.1), [1.5 * (1.025**i) for i in range(20)], "cos"
)


@sc
def plateau_preserves_type(m):
    net, opt = setup(m)
    s = S(m).ReduceLROnPlateau(opt, mode="min", patience=0)
    s.step(1.0)
    s.step(2.0)
    return [type(g["lr"]).__name__ for g in opt.param_groups], lrs(opt)


@sc
def plateau_add_group_errors(m):
    net, opt = setup(m)
    s = S(m).ReduceLROnPlateau(
        opt, mode="min", threshold_mode="rel", threshold=1e-5, patience=0, cooldown=0, min_lr=[1e-5, 1e-4]
    )
    opt.add_param_group({"params": [m.nn.Parameter(m.rand(2, 3))], "lr": 0.05})
    opt.step()
    s.step(1)
    opt.step()
    s.step(1.3)


@sc
def plateau_add_group_scalar(m):
    net, opt = setup(m)
    for g in opt.param_groups:
        g["lr"] = 0.5
    s = S(m).ReduceLROnPlateau(opt, mode="min", threshold_mode="rel", threshold=0.1, patience=5, cooldown=5, min_lr=0)
    tr = []
    for e, x in enumerate([1] * 7 + [0.6] + [0.5] * 12):
        if e == 8:
            opt.add_param_group({"params": [m.nn.Parameter(m.rand(2, 3))], "lr": 0.05})
        opt.step()
        s.step(x)
        tr.append(lrs(opt))
    return tr


@sc
def plateau_add_group_list(m):
    net, opt = setup(m)
    for g in opt.param_groups:
        g["lr"] = 0.5
    s = S(m).ReduceLROnPlateau(
        opt, mode="min", threshold_mode="rel", threshold=0.1, patience=5, cooldown=5, min_lr=[1e-5, 1e-4]
    )
    tr = []
    for e, x in enumerate([1] * 7 + [0.6] + [0.5] * 12):
        if e == 8:
            opt.add_param_group({"params": [m.nn.Parameter(m.rand(2, 3))], "lr": 0.05})
            s.min_lrs.append(1e-6)
        opt.step()
        s.step(x)
        tr.append(lrs(opt))
    return tr


@sc
def plateau_state_dict(m):
    net, opt = setup(m)
    s = S(m).ReduceLROnPlateau(opt, mode="min", factor=0.1, patience=2)
    for x in [1.0, 2.0, 3.0, 4.0, 3.0, 4.0, 5.0, 3.0, 2.0, 1.0]:
        s.step(x)
    c = S(m).ReduceLROnPlateau(opt, mode="max", factor=0.5, patience=10)
    c.load_state_dict(s.state_dict())
    return (
        sorted(k for k in s.__dict__),
        [(k, s.__dict__[k] == c.__dict__[k]) for k in sorted(s.__dict__) if k not in ("optimizer", "is_better")],
        sorted(s.state_dict()),
    )


@sc
def plateau_get_last_lr_before_step(m):
    net, opt = setup(m)
    for g in opt.param_groups:
        g["lr"] = 0.5
    return S(m).ReduceLROnPlateau(opt).get_last_lr()


@sc
def old_pattern(m):
    net, opt = setup(m)
    s = S(m).StepLR(opt, gamma=0.1, step_size=3)
    for _ in range(5):
        s.step()
        opt.step()


@sc
def old_pattern_resume(m):
    net, opt = setup(m)
    for g in opt.param_groups:
        g["initial_lr"] = 0.01
    s = S(m).StepLR(opt, gamma=0.1, step_size=3, last_epoch=10)
    for _ in range(5):
        s.step()
        opt.step()
    return lrs(opt)


@sc
def overridden_step(m):
    net, opt = setup(m)
    s = S(m).StepLR(opt, gamma=0.1, step_size=3)
    old = opt.step
    opt.step = types.MethodType(lambda o, *a, **k: old(*a, **k), opt)
    for _ in range(3):
        opt.step()
        s.step()


@sc
def overridden_step_old(m):
    net, opt = setup(m)
    for g in opt.param_groups:
        g["initial_lr"] = 0.01
    s = S(m).StepLR(opt, gamma=0.1, step_size=3, last_epoch=10)
    old = opt.step
    opt.step = types.MethodType(lambda o, *a, **k: old(*a, **k), opt)
    for _ in range(3):
        s.step()
        opt.step()


@sc
def const_epoch(m):
    out = []
    for mk in ["step", "exp", "const_default", "linear_default", "poly_default"]:
        net, opt = setup(m)
        s = makers[mk](m, opt)
        for _ in range(4):
            opt.step()
            s.step(2)
            out.append(lrs(opt))
    return out


@sc
def getlr_has_epoch(m):
    class MS(S(m).LRScheduler):
        def __init__(self, optimizer, last_epoch=-1):
            super().__init__(optimizer, last_epoch)

        def get_lr(self, step):
            return [1.0]

    MS(m.optim.SGD([m.rand(1)], lr=1))


@sc
def no_initial_lr(m):
    S(m).StepLR(m.optim.SGD([m.nn.Parameter(m.randn(2, 2))], 0.1), step_size=3, gamma=0.1, last_epoch=1)


@sc
def linear_bad1(m):
    net, opt = setup(m)
    S(m).LinearLR(opt, start_factor=0.0, total_iters=4)


@sc
def linear_bad2(m):
    net, opt = setup(m)
    S(m).LinearLR(opt, start_factor=1.1, total_iters=4)


@sc
def cos_continue(m):
    net, opt = setup(m)
    s = S(m).CosineAnnealingLR(opt, T_max=5, eta_min=0.1)
    opt.step()
    s.step()
    n = S(m).CosineAnnealingLR(opt, T_max=5, eta_min=0.1, last_epoch=0)
    return [float(x) for x in s._last_lr], [float(x) for x in n._last_lr]


@sc
def seq4_initial(m):
    opt = m.optim.SGD([m.tensor(0.5)], lr=0.1)
    p = opt.param_groups[0]["lr"]
    S(m).SequentialLR(opt, [S(m).ConstantLR(opt, factor=1), S(m).ConstantLR(opt, factor=0.1)], milestones=[10])
    return p, opt.param_groups[0]["lr"]


@sc
def seq_tensor_lr_alias(m):
    net = m.nn.Sequential(m.nn.Conv2d(1, 1, 1), m.nn.Conv2d(1, 1, 1))
    opt = m.optim.SGD(net.parameters(), lr=m.tensor(2.0))
    s = S(m).SequentialLR(
        opt, [S(m).LinearLR(opt, 0.1, 0.8, total_iters=4), S(m).LinearLR(opt, 0.8, 0.1, total_iters=4)], milestones=[4]
    )
    tr = []
    for _ in range(8):
        tr.append(lrs(opt))
        opt.step()
        s.step()
    return tr


@sc
def seq_no_warnings(m):
    net, opt = setup(m)
    s = S(m).SequentialLR(
        opt,
        schedulers=[
            S(m).LinearLR(opt, start_factor=0.5, end_factor=0.1, total_iters=5),
            S(m).ExponentialLR(opt, gamma=0.9),
        ],
        milestones=[5],
    )
    for _ in range(10):
        opt.step()
        s.step()


@sc
def chained_before_step(m):
    net, opt = setup(m)
    ss = [S(m).LinearLR(opt, start_factor=0.4, total_iters=3), S(m).MultiStepLR(opt, milestones=[4, 8, 10], gamma=0.1)]
    c = S(m).ChainedScheduler(ss)
    return c.get_last_lr() == ss[-1].get_last_lr(), [float(x) for x in c.get_last_lr()]


@sc
def cyc_bad_mode(m):
    net, opt = setup(m)
    S(m).CyclicLR(opt, base_lr=0, max_lr=0, mode="CATS")


@sc
def cyc_rprop(m):
    net, _ = setup(m)
    S(m).CyclicLR(m.optim.Rprop(net.parameters()), base_lr=1, max_lr=5, cycle_momentum=True)


@sc
def cyc_adam(m):
    net, _ = setup(m)
    o = m.optim.Adam(net.parameters())
    S(m).CyclicLR(o, base_lr=1, max_lr=5, cycle_momentum=True)
    return lrs(o, "betas")


@sc
def cyc_adam_momentumless(m):
    net, _ = setup(m)
    o = m.optim.Adam([{"params": net[0].parameters()}, {"params": net[1].parameters(), "lr": 0.5}], lr=0.05)
    s = S(m).CyclicLR(o, base_lr=1, max_lr=5, step_size_up=4, cycle_momentum=False)
    tr = []
    for _ in range(11):
        tr.append((lrs(o), lrs(o, "betas")))
        o.step()
        s.step()
    return tr


@sc
def onecycle_adam(m):
    net, _ = setup(m)
    o = m.optim.Adam([{"params": net[0].parameters()}, {"params": net[1].parameters(), "lr": 0.5}], lr=0.05)
    s = S(m).OneCycleLR(
        o, max_lr=25, final_div_factor=2, base_momentum=1, max_momentum=22, total_steps=10, anneal_strategy="linear"
    )
    tr = []
    for _ in range(10):
        tr.append((lrs(o), lrs(o, "betas")))
        o.step()
        s.step()
    return tr


@sc
def cyc_state_picklable(m):
    net, _ = setup(m)
    o = m.optim.Adam(net.parameters())
    out = []
    s = S(m).CyclicLR(o, base_lr=1, max_lr=5, cycle_momentum=False)
    st = s.state_dict()
    out.append(("_scale_fn_ref" in st, st.get("_scale_fn_custom", "MISSING"), sorted(st)))
    pickle.dumps(st)

    def fn(_):
        return 0.5

    s = S(m).CyclicLR(o, base_lr=1, max_lr=5, cycle_momentum=False, scale_fn=fn)
    st = s.state_dict()
    out.append(("_scale_fn_ref" in st, st.get("_scale_fn_custom", "MISSING")))
    pickle.dumps(st)

    class F:
        def __init__(self):
            self.x = 0.5

        def __call__(self, _):
            return self.x

    s = S(m).CyclicLR(o, base_lr=1, max_lr=5, cycle_momentum=False, scale_fn=F())
    st = s.state_dict()
    out.append(("_scale_fn_ref" in st, st.get("_scale_fn_custom", "MISSING")))
    pickle.dumps(st)
    return out


@sc
def cyc_restore(m):
    net, _ = setup(m)
    o = m.optim.Adam(net.parameters())
    s = S(m).CyclicLR(o, base_lr=1, max_lr=5, cycle_momentum=False, mode="triangular2")
    r = S(m).CyclicLR(o, base_lr=1, max_lr=5, cycle_momentum=False)
    r.load_state_dict(s.state_dict())
    tr = [r.mode, r._scale_fn_custom]
    for _ in range(12):
        o.step()
        s.step()
        r.step()
        tr.append((s.get_last_lr(), r.get_last_lr()))
    return tr


@sc
def onecycle_bad_anneal(m):
    net, opt = setup(m)
    S(m).OneCycleLR(opt, max_lr=1e-3, total_steps=10, anneal_strategy="CATS")


@sc
def onecycle_bad_pct(m):
    net, opt = setup(m)
    S(m).OneCycleLR(opt, max_lr=1e-3, total_steps=10, pct_start=1.1)


@sc
def onecycle_no_total(m):
    net, opt = setup(m)
    S(m).OneCycleLR(opt, max_lr=1e-3)


@sc
def onecycle_past_end(m):
    net, opt = setup(m)
    s = S(m).OneCycleLR(opt, max_lr=1, total_steps=3)
    for _ in range(4):
        opt.step()
        s.step()


@sc
def mult_not_fn(m):
    net, opt = setup(m)
    S(m).MultiplicativeLR(opt, 0.95)


@sc
def mult_not_fn_list(m):
    net, opt = setup(m)
    S(m).MultiplicativeLR(opt, [0.95, 0.95])


@sc
def lambda_not_fn(m):
    net, opt = setup(m)
    S(m).LambdaLR(opt, 0.95)


@sc
def cawr_frac(m):
    out = []
    for T_mult in [1, 2, 4]:
        net, opt = setup(m)
        s = S(m).CosineAnnealingWarmRestarts(opt, T_0=10, T_mult=T_mult, eta_min=1e-10)
        for i in range(0, 300, 7):
            s.step(round(i * 0.1, 1))
            out.append(lrs(opt))
    return out


@sc
def cawr_interleaved(m):
    out = []
    for ep, T_mult in [
        ([0, 1, 2, 3, 4, 5, 12, 27, 3, 4, 5, 6, 13], 1),
        ([0, 1, 2, 3, 4, 5, 25, 32, 33, 34, 80, 81, 3], 2),
        ([0, 0.1, 0.2, 0.3, 1.3, 2.3, 17.5, 18.5, 19.5, 29.5, 30.5, 31.5, 50], 3),
    ]:
        net, opt = setup(m)
        s = S(m).CosineAnnealingWarmRestarts(opt, T_0=10, T_mult=T_mult, eta_min=1e-10)
        for e in ep:
            s.step(e)
            out.append((lrs(opt), s.T_cur, s.T_i))
    return out


@sc
def cawr_tcur_reset(m):
    net, opt = setup(m)
    s = S(m).CosineAnnealingWarmRestarts(opt, T_0=4)
    out = []
    for e in [7, 8, 9]:
        s.T_cur = e
        s.step()
        out.append(s.T_cur)
    return out


@sc
def cawr_bad(m):
    net, opt = setup(m)
    out = []
    for kw in [dict(T_0=0), dict(T_0=2.5), dict(T_0=2, T_mult=0), dict(T_0=2, T_mult=1.5), dict(T_0=2, eta_min="a")]:
        try:
            S(m).CosineAnnealingWarmRestarts(opt, **kw)
            out.append("ok")
        except Exception as e:
            out.append((type(e).__name__, str(e)))
    return out


@sc
def cawr_neg_epoch(m):
    net, opt = setup(m)
    s = S(m).CosineAnnealingWarmRestarts(opt, T_0=4)
    s.step(-1)


@sc
def swalr_hypers(m):
    net, opt = setup(m)
    out = []
    for kw in [
        dict(anneal_strategy="exponential", swa_lr=1.0),
        dict(anneal_epochs=-1, swa_lr=1.0),
        dict(anneal_epochs=1.7, swa_lr=1.0),
        dict(swa_lr=[1.0, 0.1, 0.01]),
    ]:
        try:
            m.optim.swa_utils.SWALR(opt, **kw)
            out.append("ok")
        except Exception as e:
            out.append((type(e).__name__, str(e)))
    return out


@sc
def swalr_after_mult(m):
    net, opt = setup(m)
    s = S(m).MultiplicativeLR(opt, lr_lambda=lambda e: 0.9)
    w = m.optim.swa_utils.SWALR(opt, anneal_epochs=5, swa_lr=0.01)
    tr = []
    for e in range(15):
        tr.append(lrs(opt))
        opt.step()
        (w if e >= 5 else s).step()
    return tr


def sd_check(c1, c2, epochs=10):
    def f(m):
        net, opt = setup(m)
        s = c1(m, opt)
        for _ in range(epochs):
            opt.step()
            s.step()
        c = c2(m, opt)
        c.load_state_dict(s.state_dict())
        bad = [k for k in s.__dict__ if k != "optimizer" and not _eq(s.__dict__[k], c.__dict__[k])]
        return bad, s.get_last_lr() == c.get_last_lr(), sorted(s.state_dict())

    return f


def _eq(a, b):
    try:
        r = a == b
        return bool(r) if not hasattr(r, "all") else bool(r.all())
    except Exception:
        return "?"


SC["sd_step"] = sd_check(
    lambda m, o: S(m).StepLR(o, gamma=0.1, step_size=3), lambda m, o: S(m).StepLR(o, gamma=0.005, step_size=1)
)
SC["sd_multistep"] = sd_check(
    lambda m, o: S(m).MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9]),
    lambda m, o: S(m).MultiStepLR(o, gamma=0.01, milestones=[1, 4, 6]),
)
SC["sd_exp"] = sd_check(lambda m, o: S(m).ExponentialLR(o, gamma=0.1), lambda m, o: S(m).ExponentialLR(o, gamma=0.01))
SC["sd_cos"] = sd_check(
    lambda m, o: S(m).CosineAnnealingLR(o, T_max=10, eta_min=1e-10),
    lambda m, o: S(m).CosineAnnealingLR(o, T_max=5, eta_min=5e-11),
)
SC["sd_cawr"] = sd_check(
    lambda m, o: S(m).CosineAnnealingWarmRestarts(o, T_0=10, T_mult=2),
    lambda m, o: S(m).CosineAnnealingWarmRestarts(o, T_0=100),
)
SC["sd_swa"] = sd_check(
    lambda m, o: m.optim.swa_utils.SWALR(o, anneal_epochs=3, swa_lr=0.5),
    lambda m, o: m.optim.swa_utils.SWALR(o, anneal_epochs=10, anneal_strategy="linear", swa_lr=5.0),
)


class LObj:
    def __init__(self, v):
        self.value = v

    def __call__(self, e):
        return self.value * e

    def __eq__(self, o):
        return isinstance(o, LObj) and self.__dict__ == o.__dict__


@sc
def lambda_sd_fn(m):
    net, opt = setup(m)
    s = S(m).LambdaLR(opt, lr_lambda=lambda x: x)
    st = s.state_dict()
    c = S(m).LambdaLR(opt, lr_lambda=lambda x: x)
    c.load_state_dict(st)
    return st["lr_lambdas"], [
        k for k in s.__dict__ if k not in ("optimizer", "lr_lambdas") and not _eq(s.__dict__[k], c.__dict__[k])
    ]


@sc
def lambda_sd_obj(m):
    net, opt = setup(m)
    s = S(m).LambdaLR(opt, lr_lambda=LObj(10))
    st = s.state_dict()
    c = S(m).LambdaLR(opt, lr_lambda=LObj(-1))
    c.load_state_dict(st)
    return st["lr_lambdas"], [
        k for k in s.__dict__ if k not in ("optimizer",) and not _eq(s.__dict__[k], c.__dict__[k])
    ]


def sdload_classes(m):
    s = S(m)
    return [
        partial(s.LambdaLR, lr_lambda=lambda e: e // 10),
        partial(s.MultiplicativeLR, lr_lambda=lambda: 0.95),
        partial(s.StepLR, step_size=30),
        partial(s.MultiStepLR, milestones=[30, 80]),
        s.ConstantLR,
        s.LinearLR,
        partial(s.ExponentialLR, gamma=0.9),
        s.PolynomialLR,
        partial(s.CosineAnnealingLR, T_max=10),
        lambda o, **k: s.ChainedScheduler(schedulers=[s.ConstantLR(o), s.ConstantLR(o)], **k),
        lambda o, **k: s.SequentialLR(o, schedulers=[s.ConstantLR(o), s.ConstantLR(o)], milestones=[2], **k),
        s.ReduceLROnPlateau,
        partial(s.CyclicLR, base_lr=0.01, max_lr=0.1),
        partial(s.OneCycleLR, max_lr=0.01, total_steps=10, anneal_strategy="linear"),
        partial(s.CosineAnnealingWarmRestarts, T_0=20),
        partial(m.optim.swa_utils.SWALR, swa_lr=0.01),
    ]


for i in range(16):
    for wo in (True, False):

        def f(m, i=i, wo=wo):
            net, opt = setup(m)
            C = sdload_classes(m)[i]
            s = C(opt)
            st = s.state_dict()
            b = io.BytesIO()
            m.save(st, b)
            b.seek(0)
            ld = m.load(b, weights_only=wo)
            eq = _eq(repr(sorted(st.items(), key=lambda kv: kv[0])), repr(sorted(ld.items(), key=lambda kv: kv[0])))
            s2 = C(opt)
            s2.load_state_dict(ld)
            return eq, _eq(repr(sorted(s2.state_dict().items())), repr(sorted(st.items())))

        SC[f"sdload_{i}_{wo}"] = f


def const_init(i):
    def f(m):
        s = S(m)
        C = [
            partial(s.LambdaLR, lr_lambda=lambda e: e // 10),
            partial(s.MultiplicativeLR, lr_lambda=lambda e: 0.95),
            partial(s.StepLR, step_size=30),
            partial(s.MultiStepLR, milestones=[30, 80]),
            s.ConstantLR,
            s.LinearLR,
            partial(s.ExponentialLR, gamma=0.9),
            s.PolynomialLR,
            partial(s.CosineAnnealingLR, T_max=10),
            partial(s.CosineAnnealingWarmRestarts, T_0=20),
        ][i]
        lr = m.as_tensor(0.1)
        opt = m.optim.SGD([m.nn.Parameter(m.randn(1))], lr=lr)
        sch = C(opt)
        ori = copy.deepcopy(opt.param_groups)
        out = []
        for k in range(2):
            opt.step()
            sch.step(k)
            lr.multiply_(0.1)
            for g, og in zip(opt.param_groups, ori):
                out.append(
                    (
                        float(g["initial_lr"]) == float(og["initial_lr"]),
                        [float(x) for x in sch.base_lrs],
                        sch.base_lrs[0] is not g["initial_lr"],
                        type(sch.base_lrs[0]).__name__,
                        lrs(opt),
                    )
                )
        return out

    return f


for i in range(10):
    SC[f"constinit_{i}"] = const_init(i)


@sc
def constinit_cyclic(m):
    lr = m.as_tensor(0.1)
    mx = m.as_tensor(0.2)
    bm = m.as_tensor(0.8)
    xm = m.as_tensor(0.9)
    opt = m.optim.SGD([m.nn.Parameter(m.randn(1))], lr=lr)
    sch = S(m).CyclicLR(opt, base_lr=lr, max_lr=mx, base_momentum=bm, max_momentum=xm)
    out = []
    for i in range(2):
        for t in (lr, mx, bm, xm):
            t.multiply_(0.5)
        opt.step()
        sch.step(i)
        g = opt.param_groups[0]
        out.append(
            (
                float(g["initial_lr"]),
                float(g["max_momentum"]),
                float(g["base_momentum"]),
                [float(x) for x in sch.base_lrs],
                [float(x) for x in sch.max_lrs],
                lrs(opt),
                lrs(opt, "momentum"),
            )
        )
    return out


@sc
def constinit_onecycle(m):
    lr = m.as_tensor(0.1)
    bm = m.as_tensor(0.85)
    xm = m.as_tensor(0.95)
    opt = m.optim.SGD([m.nn.Parameter(m.randn(1))], lr=lr)
    sch = S(m).OneCycleLR(opt, max_lr=lr, total_steps=10, base_momentum=bm, max_momentum=xm)
    out = []
    for i in range(2):
        for t in (lr, bm, xm):
            t.multiply_(0.5)
        opt.step()
        sch.step(i)
        g = opt.param_groups[0]
        out.append(
            [round(float(g[k]), 9) for k in ("initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum")]
            + [lrs(opt)]
        )
    return out


@sc
def constinit_swalr(m):
    lr = m.as_tensor(0.1)
    sl = m.as_tensor(0.05)
    opt = m.optim.SGD([m.nn.Parameter(m.randn(1))], lr=lr)
    sch = m.optim.swa_utils.SWALR(opt, swa_lr=sl)
    out = []
    for _i in range(2):
        lr.multiply_(0.5)
        sl.multiply_(0.5)
        opt.step()
        sch.step()
        g = opt.param_groups[0]
        out.append((float(g["initial_lr"]), float(g["swa_lr"]), [float(x) for x in sch.base_lrs], lrs(opt)))
    return out


def ckpt(i):
    def f(m):
        s = S(m)
        C = [
            partial(s.ExponentialLR, gamma=0.999),
            partial(s.LambdaLR, lr_lambda=lambda epoch: epoch // 30),
            partial(s.MultiplicativeLR, lr_lambda=lambda epoch: 0.95),
            partial(s.StepLR, step_size=30),
            partial(s.MultiStepLR, milestones=[30, 80]),
            s.ConstantLR,
            s.LinearLR,
            s.PolynomialLR,
            partial(s.CosineAnnealingLR, T_max=10),
            partial(s.CosineAnnealingWarmRestarts, T_0=20),
            partial(s.CyclicLR, base_lr=0.01, max_lr=0.1),
            partial(s.OneCycleLR, max_lr=0.01, total_steps=10),
            partial(m.optim.swa_utils.SWALR, swa_lr=0.01),
        ][i]
        model = m.nn.Linear(3, 3)
        o = m.optim.AdamW(model.parameters())
        sch = C(o)
        o.step()
        sch.step()
        o2 = m.optim.AdamW(model.parameters())
        o2.load_state_dict(o.state_dict())
        sch2 = C(o2, last_epoch=0)
        return [round(float(x), 9) for x in sch2.get_last_lr()], lrs(o), lrs(o2)

    return f


for i in range(13):
    SC[f"ckpt_{i}"] = ckpt(i)


@sc
def ckpt_plateau(m):
    model = m.nn.Linear(3, 3)
    o = m.optim.AdamW(model.parameters())
    sch = S(m).ReduceLROnPlateau(o, mode="min")
    o.step()
    sch.step(1)
    o2 = m.optim.AdamW(model.parameters())
    o2.load_state_dict(o.state_dict())
    return S(m).ReduceLROnPlateau(o2, mode="min").get_last_lr(), lrs(o)


@sc
def cosine_then_cyclic(m):
    model = m.nn.Linear(2, 1)
    o = m.optim.SGD(model.parameters(), lr=0.5)
    a = S(m).CosineAnnealingLR(o, T_max=20, eta_min=0.1)
    b = S(m).CyclicLR(o, base_lr=0.1, max_lr=0.3, step_size_up=1, step_size_down=3)
    tr = []
    for i in range(40):
        o.step()
        (a if i <= a.T_max else b).step()
        tr.append(lrs(o))
    return tr


@sc
def get_lr_warn(m):
    net, opt = setup(m)
    s = S(m).ExponentialLR(opt, gamma=0.5)
    return [round(float(x), 9) for x in s.get_lr()]


@sc
def epoch_warning_text(m):
    return S(m).EPOCH_DEPRECATION_WARNING


@pytest.mark.parametrize("name", list(SC))
def test_scheduler_scenario_matches_torch(name: str) -> None:
    if name == "swalr_hypers":
        skip_before_pytorch(2, 13, "SWALR's anneal_strategy message (older: 'must by one of')")
    assert record(SC[name], vkml) == record(SC[name], torch)


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", list(SLOW))
def test_every_schedule_stepped_otherwise_matches_torch(name: str) -> None:
    assert record(SLOW[name], vkml) == record(SLOW[name], torch)


def test_tensor_lr_on_vulkan_is_filled_in_place(gpu) -> None:
    """A tensor lr on the Vulkan device stays the same tensor, filled with torch's values."""
    weights = vkml.nn.Parameter(vkml.ones(3, device=gpu))
    lr = vkml.tensor(0.5, device=gpu)
    opt = vkml.optim.SGD([weights], lr=lr)
    sched = vkml.optim.lr_scheduler.CyclicLR(opt, base_lr=0.1, max_lr=0.9, step_size_up=3, cycle_momentum=False)
    topt = torch.optim.SGD([torch.nn.Parameter(torch.ones(3))], lr=torch.tensor(0.5))
    tsched = torch.optim.lr_scheduler.CyclicLR(topt, base_lr=0.1, max_lr=0.9, step_size_up=3, cycle_momentum=False)
    for _ in range(7):
        weights.grad = vkml.ones(3, device=gpu)
        opt.step()
        sched.step()
        topt.step()
        tsched.step()
        assert opt.param_groups[0]["lr"] is lr
        assert lr.item() == topt.param_groups[0]["lr"].item()
        assert sched.get_last_lr()[0] is not lr
