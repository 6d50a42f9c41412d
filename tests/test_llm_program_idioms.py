"""Gaps found by the LLM-family programs (tests/programs/llama_decoder.py, moe_router.py,
selective_scan.py, t5_encoder_decoder.py) and by pure bfloat16 fine-tuning in their style, each checked
against PyTorch on the CPU."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import vkml

PY_TYPES = [bool, int, float, complex]


@pytest.mark.parametrize("kind", PY_TYPES, ids=lambda t: t.__name__)
def test_python_number_types_are_dtypes(kind):
    """``torch.ones(T, T, dtype=bool)`` (Mamba-2's segsum mask), ``x.to(float)``, ``sum(dtype=int)``:
    PyTorch reads bool, int, float and complex as bool, int64, float64 and complex128 wherever a dtype
    is asked for."""
    cases = [
        lambda m: m.ones(2, 2, dtype=kind),
        lambda m: m.zeros_like(m.ones(2), dtype=kind),
        lambda m: m.full((2,), 1, dtype=kind),
        lambda m: m.tensor([1, 0], dtype=kind),
        lambda m: m.empty(3, dtype=kind).fill_(1),
        lambda m: m.ones(2).to(kind),
        lambda m: m.ones(2).to(dtype=kind),
        lambda m: m.ones(2).to("cpu", kind),
    ]
    if kind is not complex:  # nor has vkml new_zeros or reductions with a complex dtype= (docs/complex.md)
        cases += [lambda m: m.ones(2).new_zeros(2, dtype=kind), lambda m: m.ones(2).sum(dtype=kind)]
    if kind in (int, float):  # PyTorch has no bool cumsum
        cases.append(lambda m: m.ones(3).cumsum(0, dtype=kind))
    for case in cases:
        expected, got = case(torch), case(vkml)
        assert got.dtype.name == str(expected.dtype).removeprefix("torch.")
        assert got.tolist() == expected.tolist()


def test_module_to_python_number_type():
    assert (
        vkml.nn.Linear(2, 2).to(float).weight.dtype is vkml.float64
        and torch.nn.Linear(2, 2).to(float).weight.dtype is torch.float64
    )
    assert vkml.nn.Linear(2, 2).to(dtype=float).bias.dtype is vkml.float64
    for m in (torch, vkml):  # an integer dtype is refused as for Module.to(torch.int64)
        with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
            m.nn.Linear(2, 2).to(int)


def test_python_bool_dtype_mask_in_masked_fill():
    """Mamba-2's segment sum: ``torch.tril(torch.ones(T, T, dtype=bool))`` masks a cumulative sum."""
    x = [[0.5, -1.0, 0.25], [2.0, 0.0, -0.5]]
    results = []
    for m in (torch, vkml):
        t = m.tensor(x)
        mask = m.tril(m.ones(3, 3, dtype=bool), diagonal=0)
        segsum = t[..., :, None] - t[..., None, :]
        results.append(segsum.masked_fill(~mask, -m.inf).exp().tolist())
    assert results[0] == results[1]


def test_parameter_takes_attributes_of_its_own():
    """mamba_ssm marks ``dt_proj.bias._no_reinit = True`` and its init reads it back with getattr;
    optimizer-group code marks ``p._no_weight_decay``. PyTorch's Parameter takes any attribute, and
    keeps it through ``Module.to`` (the same object) but not through ``copy.deepcopy``."""
    for m in (torch, vkml):
        layer = m.nn.Linear(3, 2)
        layer.bias._no_reinit = True
        assert getattr(layer.bias, "_no_reinit", False) is True
        assert getattr(layer.weight, "_no_reinit", False) is False
        assert layer.to("cpu").bias._no_reinit is True
        assert not hasattr(copy.deepcopy(layer).bias, "_no_reinit")
        with pytest.raises(AttributeError):
            layer.weight._no_reinit  # noqa: B018


HALF = ["bfloat16", "float16"]
COMBINED = {
    "add_alpha": lambda m, a, b, c: m.add(a, b, alpha=0.37),
    "sub_alpha": lambda m, a, b, c: a.sub(b, alpha=-1.3),
    "add__alpha": lambda m, a, b, c: a.clone().add_(b, alpha=-0.01),
    "sub__alpha": lambda m, a, b, c: a.clone().sub_(c, alpha=0.7),
    "addcmul": lambda m, a, b, c: m.addcmul(a, b, c, value=0.001),
    "addcmul_": lambda m, a, b, c: a.clone().addcmul_(b, b, value=0.5),
    "addcdiv": lambda m, a, b, c: m.addcdiv(a, b, c),
    "addcdiv_": lambda m, a, b, c: a.clone().addcdiv_(b, c, value=-0.01),
}


@pytest.mark.parametrize("dtype", HALF)
def test_half_precision_combined_ops_round_once(dtype):
    """PyTorch computes add/sub with alpha (alpha rounded to the dtype first), addcmul and addcdiv in
    float32 for a float16 or bfloat16 result and rounds once; vkml rounded each step, moving about a
    quarter of 4096 results by an ulp (bfloat16 ``p.add_(grad, alpha=-lr)``, Adam's ``addcdiv_``)."""
    rng = np.random.default_rng(1)
    values = [rng.standard_normal(4096).astype(np.float32) for _ in range(2)]
    values.append(np.abs(rng.standard_normal(4096)).astype(np.float32) + 0.1)
    for name, op in COMBINED.items():
        results = []
        for m in (torch, vkml):
            a, b, c = (m.tensor(v).to(getattr(m, dtype)) for v in values)
            results.append(op(m, a, b, c).float().numpy())
        np.testing.assert_array_equal(results[1], results[0], err_msg=f"{name} {dtype}")


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("AdamW", {"weight_decay": 0.1}),
        ("Adam", {"weight_decay": 0.05, "amsgrad": True}),
        ("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01, "nesterov": True}),
        ("RMSprop", {"momentum": 0.5, "centered": True, "weight_decay": 0.01}),
        ("Adagrad", {"lr": 0.1, "weight_decay": 0.01}),
        ("Adamax", {"weight_decay": 0.1}),
        ("NAdam", {"weight_decay": 0.1}),
        ("Adadelta", {"lr": 1.0, "weight_decay": 0.1}),
    ],
)
def test_optimizers_on_bfloat16_parameters_match_pytorch(name, options):
    """Pure bfloat16 fine-tuning (``model.to(torch.bfloat16)`` then the optimizer): every weight and state
    after three steps is PyTorch's single-tensor path's, bit for bit (before: up to 1 in 5 weights an ulp
    off)."""
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal(256).astype(np.float32)
    grads = [0.1 * rng.standard_normal(256).astype(np.float32) for _ in range(3)]
    results = []
    for m in (torch, vkml):
        p = m.nn.Parameter(m.tensor(w0).to(m.bfloat16))
        opt = getattr(m.optim, name)([p], **{"lr": 1e-2, "foreach": False, **options})
        for g in grads:
            p.grad = m.tensor(g).to(m.bfloat16)
            opt.step()
        state = opt.state[p]
        keys = sorted(k for k in state if k not in ("step", "mu_product"))  # host numbers in vkml
        results.append([p.detach().float().numpy()] + [(k, state[k].float().numpy()) for k in keys])
    assert [k for k, _ in results[1][1:]] == [k for k, _ in results[0][1:]]
    np.testing.assert_array_equal(results[1][0], results[0][0])
    for (key, got), (_, expected) in zip(results[1][1:], results[0][1:], strict=True):
        np.testing.assert_array_equal(got, expected, err_msg=key)


@pytest.mark.parametrize("norm_type", [2.0, 3.0, float("inf")])
def test_clip_grad_norm_of_bfloat16_gradients_matches_pytorch(norm_type):
    """Each gradient's norm is computed in float32 and rounded once, as PyTorch's vector_norm of a
    bfloat16 tensor (before: the squares rounded to bfloat16 first, and a clip coefficient an ulp off)."""
    rng = np.random.default_rng(9)  # a draw whose 2-norm moved by an ulp before
    grads = [rng.standard_normal(n).astype(np.float32) for n in (12, 40, 7)]
    results = []
    for m in (torch, vkml):
        params = [m.nn.Parameter(m.zeros(len(g), dtype=m.bfloat16)) for g in grads]
        for p, g in zip(params, grads, strict=True):
            p.grad = m.tensor(g).to(m.bfloat16)
        norm = m.nn.utils.clip_grad_norm_(params, 0.5, norm_type=norm_type)
        results.append([norm.float().item()] + [p.grad.float().numpy() for p in params])
    assert results[1][0] == results[0][0]
    for got, expected in zip(results[1][1:], results[0][1:], strict=True):
        np.testing.assert_array_equal(got, expected)
