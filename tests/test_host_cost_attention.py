"""The host path of one ``scaled_dot_product_attention`` call: a bounded count of Python bytecodes to build it,
and what its per-call plan (vkml/nn/functional_attention.py ``_plan``) must not change: the bits, the switches
read on each call, the errors."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import vkml
import vkml.nn.functional as VF
from vkml.ir import types as T
from vkml.kernels import attention_coopmat as coopmat
from vkml.nn import functional_attention as attention

CPU = vkml.device("cpu")

# Bytecodes of one build of the fused forward (B2 H2 T8 D16) once its plan is made. The checks, the shape
# and kernel choice, the structure key and the output specs made on every call took about 3000.
BUILD_CEILING = 1700


def _bytecodes(fn, runs: int = 3) -> float:
    count = [0]

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            count[0] += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        for _ in range(runs):
            fn()
    finally:
        sys.settrace(previous)
    return count[0] / runs


def _qkv(dtype=np.float32, seed=0):
    g = np.random.default_rng(seed)
    return [vkml.tensor(g.standard_normal((2, 2, 8, 16)).astype(dtype), device=CPU) for _ in range(3)]


def test_build_stays_under_its_bytecode_ceiling():
    q, k, v = _qkv()
    VF.scaled_dot_product_attention(q, k, v)  # the plan, made once
    count = _bytecodes(lambda: VF.scaled_dot_product_attention(q, k, v))
    assert count <= BUILD_CEILING, count


def test_a_planned_call_gives_the_first_calls_bits():
    q, k, v = _qkv(seed=1)
    attention._PLANS.clear()
    first = VF.scaled_dot_product_attention(q, k, v, is_causal=True).numpy()
    again = VF.scaled_dot_product_attention(q, k, v, is_causal=True).numpy()
    np.testing.assert_array_equal(first, again)
    scaled = VF.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.5).numpy()  # same plan, own scale
    want = attention._composite(q, k, v, None, 0.0, True, 0.5, False).numpy()
    np.testing.assert_allclose(scaled, want, rtol=2e-6, atol=2e-6)


def _structure(out) -> tuple:
    return out.node.arg.call.structure.key


def test_switches_changed_between_calls_take_effect(monkeypatch):
    q, k, v = _qkv(np.float16, seed=2)
    # the CPU has no matrix units: a stand-in that reads the switch as the real ``applies`` does
    monkeypatch.setattr(coopmat, "applies", lambda features, shape: shape.dtype is T.float16 and coopmat_switch())
    coopmat_switch = vkml.config.attention_coopmat
    structures = []
    for tiled, matrix in (("1", "1"), ("0", "1"), ("0", "0"), ("1", "0"), ("1", "1")):
        monkeypatch.setenv("VKML_ATTENTION_TILED", tiled)
        monkeypatch.setenv("VKML_ATTENTION_COOPMAT", matrix)
        structures.append(_structure(VF.scaled_dot_product_attention(q, k, v)))
    kinds = [(s[0], s[1].tiled) for s in structures]
    assert kinds == [
        ("attention coopmat", True),
        ("attention coopmat", False),
        ("attention", False),
        ("attention", True),
        ("attention coopmat", True),
    ]
    assert structures[0] == structures[-1]


def test_errors_still_raise_after_a_planned_call():
    q, k, v = _qkv(seed=3)
    VF.scaled_dot_product_attention(q, k, v, dropout_p=0.0)
    with pytest.raises(ValueError, match="dropout_p must be in"):
        VF.scaled_dot_product_attention(q, k, v, dropout_p=1.5)
    mask = vkml.ones(8, 8, dtype=vkml.bool, device=CPU)
    VF.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    with pytest.raises(RuntimeError, match="should not be set when is_causal"):
        VF.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=True)
    with pytest.raises(RuntimeError, match="same last dim"):
        VF.scaled_dot_product_attention(q, vkml.ones(2, 2, 8, 4, device=CPU), v)
    # a numpy float dropout_p is checked on each call, not keyed
    out = VF.scaled_dot_product_attention(q, k, v, dropout_p=np.float64(0.0)).numpy()
    np.testing.assert_array_equal(out, VF.scaled_dot_product_attention(q, k, v).numpy())


def test_double_backward_through_a_planned_call():
    g = np.random.default_rng(4)
    arrays = [g.standard_normal((1, 2, 4, 8)).astype(np.float64) for _ in range(3)]
    grads = []
    for _ in range(2):  # the second call takes the plan the first made
        q, k, v = (vkml.tensor(a.astype(np.float32), device=CPU, requires_grad=True) for a in arrays)
        out = VF.scaled_dot_product_attention(q, k, v)
        (dq,) = vkml.autograd.grad(out.sum(), [q], create_graph=True)
        (dv,) = vkml.autograd.grad((dq * dq).sum(), [v])
        grads.append((dq.numpy(), dv.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a, b)
    assert np.abs(grads[0][1]).max() > 0


@pytest.mark.parametrize("masked", [False, True])
def test_the_planned_backward_launches_what_the_general_one_does(masked):
    """The backward's plan path against ``_fused_backward`` (which builds each call's kernel, grid and specs
    anew): the same gradients, bit for bit, with a mask (the last buffer) and dropout (the key's parameters)."""
    g = np.random.default_rng(5)
    q, k, v = (vkml.tensor(g.standard_normal((1, 2, 8, 8)).astype(np.float32), requires_grad=True) for _ in range(3))
    mask = vkml.tensor(g.standard_normal((8, 8)).astype(np.float32)) if masked else None
    vkml.manual_seed(1)
    out = VF.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.3)
    ctx = out._ctx.rule.ctx
    (q_, k_, v_, mask_, out_, lse_) = ctx.saved_tensors
    grad = vkml.tensor(g.standard_normal((1, 2, 8, 8)).astype(np.float32))
    with vkml.no_grad():
        plan = attention._backward_plan(q_, k_, v_, mask_, ctx.options)
        assert plan.fuses
        planned = attention._planned_backward(plan, q_, k_, v_, mask_, out_, lse_, grad, ctx.options)
        general = attention._fused_backward(q_, k_, v_, mask_, out_, lse_, grad, ctx.options)
    for a, b in zip(planned, general):  # every call before any realize: dk's makes its sibling dv a buffer
        mine, theirs = a.node.arg.call, b.node.arg.call
        assert mine.kernel is theirs.kernel and mine.grid == theirs.grid and mine.params == theirs.params
        assert list(mine.input_names) == list(theirs.input_names) and list(mine.out_specs) == list(theirs.out_specs)
        assert [s.skey for s in a.node.srcs] == [s.skey for s in b.node.srcs]  # the buffers, in order
        assert mine.structure.key == theirs.structure
    for a, b in zip(planned, general):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
