"""Fusion never changes bits: random graphs give the same bits fused (lazy) and unfused (eager),
on the CPU and on Vulkan, and the two backends agree."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vkml

UNARY = [vkml.neg, vkml.abs, vkml.relu, vkml.exp, vkml.tanh, vkml.sigmoid, lambda x: vkml.sqrt(vkml.abs(x))]
BINARY = [vkml.add, vkml.sub, vkml.mul, vkml.maximum, vkml.minimum, lambda a, b: a / (vkml.abs(b) + 1.0)]


def _reduce(t, kind, dim, keepdim):
    dim = dim % t.ndim
    if kind == "sum":
        return t.sum(dim=dim, keepdim=keepdim)
    if kind == "amax":
        return t.amax(dim=dim, keepdim=keepdim)
    if kind == "mean":
        return t.mean(dim=dim, keepdim=keepdim)
    if kind == "centre":  # a row result read back over the rows, and also through a flip of them (rules 3, 7)
        centred = t - t.amax(dim=dim, keepdim=True)
        return centred + centred.flip(0) if keepdim else centred
    if kind == "layer_norm":
        return vkml.nn.functional.layer_norm(t, (t.shape[-1],))
    return vkml.softmax(t, dim=dim)


def _movement(t, kind, k):
    if t.ndim == 0:
        return t
    if t.ndim < 2:
        return t.flip(0) if kind == "flip" else t
    if kind == "transpose":
        return t.T
    if kind == "flip":
        return t.flip(k % t.ndim)
    if kind == "slice":
        return t[:, ::2] if t.shape[1] > 1 else t
    return t.reshape(-1).reshape(t.shape)


step = st.one_of(
    st.tuples(st.just("unary"), st.integers(0, len(UNARY) - 1)),
    st.tuples(st.just("binary"), st.integers(0, len(BINARY) - 1), st.integers(0, 3)),
    st.tuples(
        st.just("reduce"),
        st.sampled_from(["sum", "amax", "mean", "softmax", "centre", "layer_norm"]),
        st.integers(0, 1),
        st.booleans(),
    ),
    st.tuples(st.just("move"), st.sampled_from(["transpose", "flip", "slice", "reshape"]), st.integers(0, 1)),
    st.tuples(st.just("cat"), st.integers(0, 3)),
)


def _build(program, inputs):
    pool = list(inputs)
    t = pool[0]
    for op in program:
        kind = op[0]
        if kind == "unary":
            t = UNARY[op[1]](t)
        elif kind == "binary":
            other = pool[op[2] % len(pool)]
            if other.shape != t.shape:
                other = other.sum() if other.ndim else other  # a 0-d tensor broadcasts anywhere
            t = BINARY[op[1]](t, other)
        elif kind == "reduce" and t.ndim:
            t = _reduce(t, op[1], op[2], op[3])
        elif kind == "move":
            t = _movement(t, op[1], op[2])
        elif kind == "cat" and t.ndim:
            t = vkml.cat([t, t.flip(0)], dim=0)
        pool.append(t)
    return t


def _run(program, arrays, device, eager):
    vkml.set_eager(eager)
    try:
        return _build(program, [vkml.tensor(a, device=device) for a in arrays]).numpy()
    finally:
        vkml.set_eager(False)


def _same(a, b):
    nan = np.isnan(a)
    return (
        a.shape == b.shape
        and np.array_equal(nan, np.isnan(b))
        and np.array_equal(a.view(np.uint32)[~nan], b.view(np.uint32)[~nan])
    )


_PROGRAMS = {
    "program": st.lists(step, min_size=1, max_size=7),
    "rows": st.integers(1, 9),
    "cols": st.integers(1, 300),
    "seed": st.integers(0, 2**16),
}


# Each example compiles its fused and eager kernels for both backends (seconds on CI's 2 cores):
# `make test` draws 10 programs, -m stress the 25 of the full sample.
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**_PROGRAMS)
def test_fused_equals_eager_on_both_backends(program, rows, cols, seed):
    _check_fused_equals_eager(program, rows, cols, seed)


@pytest.mark.stress
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**_PROGRAMS)
def test_fused_equals_eager_on_both_backends_many_programs(program, rows, cols, seed):
    _check_fused_equals_eager(program, rows, cols, seed)


def _check_fused_equals_eager(program, rows, cols, seed):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal((rows, cols)).astype(np.float32) for _ in range(2)]
    gpu = vkml.best_device()
    if gpu.name == "cpu":
        pytest.fail("no Vulkan device: install lavapipe")
    cpu_lazy = _run(program, arrays, "cpu", eager=False)
    cpu_eager = _run(program, arrays, "cpu", eager=True)
    gpu_lazy = _run(program, arrays, gpu, eager=False)
    gpu_eager = _run(program, arrays, gpu, eager=True)
    assert _same(cpu_lazy, cpu_eager), program
    assert _same(gpu_lazy, gpu_eager), program
    assert _same(cpu_lazy, gpu_lazy), program
