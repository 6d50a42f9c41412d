"""Valid DSL never makes SPIR-V that spirv-val rejects, and Vulkan computes the CPU's bits (hypothesis).

Random elementwise bodies over three inputs are built from the vkml.dsl functions, the
arithmetic operators, comparisons and selects. Each becomes a custom op; its kernel must
verify, assemble and pass spirv-val, and lavapipe must give the CPU interpreter's bits.
"""

from __future__ import annotations

import itertools
import operator

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from optest import F32_SPECIALS, bits

import vkml
from vkml import debug, dsl
from vkml.codegen import compile_kernel
from vkml.dsl import elementwise as custom
from vkml.ir.verify import verify_kernel

CPU = vkml.device("cpu")
N = 64

UNARY = {
    "neg": operator.neg,
    "abs": dsl.abs,
    "exp": dsl.exp,
    "expm1": dsl.expm1,
    "log": dsl.log,
    "log1p": dsl.log1p,
    "sqrt": dsl.sqrt,
    "rsqrt": dsl.rsqrt,
    "tanh": dsl.tanh,
    "sigmoid": dsl.sigmoid,
    "erf": dsl.erf,
    "gelu": dsl.gelu,
    "softplus": dsl.softplus,
    "relu": dsl.relu,
    "sign": dsl.sign,
    "floor": dsl.floor,
    "trunc": dsl.trunc,
}
BINARY = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "maximum": dsl.maximum,
    "minimum": dsl.minimum,
    "pow": dsl.pow,
}
COMPARE = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": dsl.eq, "ne": dsl.ne}
# No zero among the constants, and no subtree without an input (so none folds into a zero):
# lavapipe (Mesa 22.3, LLVM 15) folds arithmetic with a literal 0.0 as if NaN, inf and -0.0
# did not exist (x * 0.0 -> 0.0 for x = inf; x + 0.0 -> x for x = -0.0), which this test found.
CONSTANTS = [0.5, -1.25, 2.0, 0.1, 3.0, 1e-3, 100.0, -7.0]

inputs = st.tuples(st.just("x"), st.integers(0, 2))
constants = st.tuples(st.just("c"), st.sampled_from(CONSTANTS))


def _extend(children):
    either = st.one_of(children, constants)
    return st.one_of(
        st.tuples(st.sampled_from(sorted(UNARY)), children),
        st.tuples(st.sampled_from(sorted(BINARY)), children, either),
        st.tuples(st.sampled_from(sorted(BINARY)), constants, children),
        st.tuples(st.just("where"), st.sampled_from(sorted(COMPARE)), children, either, children, either),
        st.tuples(st.just("clamp"), children, either, either),
    )


bodies = st.recursive(inputs, _extend, max_leaves=6)


def evaluate(tree, inputs):
    """The DSL expression ``tree`` over ``inputs`` (IR values)."""
    kind = tree[0]
    if kind == "x":
        return inputs[tree[1]]
    if kind == "c":
        return tree[1]
    if kind in UNARY:
        return UNARY[kind](evaluate(tree[1], inputs))
    if kind in BINARY:
        return BINARY[kind](evaluate(tree[1], inputs), evaluate(tree[2], inputs))
    if kind == "where":
        a, b, c, d = (evaluate(t, inputs) for t in tree[2:])
        return dsl.where(COMPARE[tree[1]](a, b), c, d)
    return dsl.clamp(*(evaluate(t, inputs) for t in tree[1:]))


def _arrays() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    out = []
    for k in range(3):
        a = (rng.standard_normal(N) * np.exp2(rng.integers(-8, 8, N))).astype(np.float32)
        a[: len(F32_SPECIALS) // 2] = np.roll(F32_SPECIALS, 5 * k)[: len(F32_SPECIALS) // 2]
        rng.shuffle(a)
        out.append(a)
    return out


ARRAYS = _arrays()
_names = itertools.count()


def _run(op, device) -> np.ndarray:
    return op(*(vkml.tensor(a, device=device) for a in ARRAYS)).numpy()


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(tree=bodies)
def test_random_bodies_validate_and_vulkan_equals_cpu(tree, gpu):
    with custom.restoring_registry():
        op = vkml.elementwise(lambda x, y, z: evaluate(tree, (x, y, z)), name=f"prop{next(_names)}")
        kernels = []
        debug.kernel_listeners.append(kernels.append)
        try:
            vk = _run(op, gpu)
        finally:
            debug.kernel_listeners.remove(kernels.append)
        cpu = _run(op, CPU)
    assert kernels, "the op made no kernel"
    for kernel in kernels:
        verify_kernel(kernel)
        compile_kernel(kernel, gpu.features)  # assembles and runs spirv-val; raises CompileError
    assert vk.dtype == cpu.dtype and vk.shape == cpu.shape
    # NaNs match by NaN-ness: which operand's payload an arithmetic instruction keeps is not
    # specified (lavapipe may commute `nan_a + nan_b`); everything else matches bit for bit.
    both_nan = np.isnan(vk) & np.isnan(cpu) if vk.dtype.kind == "f" else np.zeros(vk.shape, bool)
    differ = np.flatnonzero((bits(vk) != bits(cpu)) & ~both_nan)
    assert differ.size == 0, (
        f"Vulkan differs from CPU at {differ[:6]}: inputs {[a[differ[:6]] for a in ARRAYS]}, "
        f"cpu {cpu[differ[:6]]}, vulkan {vk[differ[:6]]}"
    )
