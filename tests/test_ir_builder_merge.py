"""The IR builder merges common subexpressions as it emits them (vkml/ir/builder.py, its module text).

A pure instruction equal to one that dominates it returns that one's value; memory, sync and
subgroup instructions, and values of closed or sibling blocks, are never merged. The kernels
still verify, validate as SPIR-V (dominance included) and compute the same bits.
"""

from __future__ import annotations

import numpy as np

from vkml.codegen import compile_kernel
from vkml.codegen.features import DeviceFeatures
from vkml.ir import builder as B
from vkml.ir import types as T
from vkml.ir.core import Instr, walk
from vkml.ir.interp.reference import run
from vkml.ir.verify import verify_kernel


def _ops(kernel) -> list[str]:
    return [s.op for s in walk(kernel.body) if isinstance(s, Instr)]


def _run(kernel, **buffers) -> dict:
    """The buffers after one workgroup, the same from the plain and the compiled interpreter."""
    results = []
    for plain in (True, False):
        copies = {name: array.copy() for name, array in buffers.items()}
        run(kernel, (1, 1, 1), copies, {}, plain=plain)
        results.append(copies)
    for name in buffers:
        np.testing.assert_array_equal(results[0][name], results[1][name])
    return results[0]


def _checked(kernel):
    """``kernel`` after the verifier and spirv-val (through codegen) accept it."""
    verify_kernel(kernel)
    compile_kernel(kernel, DeviceFeatures.lavapipe_like())
    return kernel


def test_equal_pure_instructions_give_one_value():
    kb = B.KernelBuilder("merge", local_size=(4, 1, 1))
    x = kb.buffer("x", T.float32, "read")
    out = kb.buffer("out", T.float32, "write")
    with kb:
        i, j = B.global_id(0), B.global_id(0)
        assert i is j
        a, b = x[i], x[j]
        assert a is not b  # loads are never merged
        s, t = a * 2.0, a * 2.0
        assert s is t and (a * 2.0) is not (b * 2.0)
        assert B.bitcast(a, T.uint32) is B.bitcast(a, T.uint32)
        assert B.bitcast(a, T.uint32) is not B.bitcast(a, T.int32)  # another result type
        # constants by their bits: -0.0 and 0.0, two NaN payloads, 1 and 1.0 stay apart
        assert B.const(0.0, T.float32) is not B.const(-0.0, T.float32)
        assert B.const_bits(0x7FC00000, T.float32) is not B.const_bits(0x7FC00001, T.float32)
        assert B.const(1, T.int32) is not B.const(1, T.uint32)
        out[i] = s + b * 2.0
    kernel = _checked(kb.finish())
    assert _ops(kernel).count("global_id") == 1 and _ops(kernel).count("load") == 2
    data = np.arange(4, dtype=np.float32)
    got = _run(kernel, x=data, out=np.zeros(4, np.float32))
    np.testing.assert_array_equal(got["out"], data * 4)


def test_loads_around_a_store_stay_apart():
    kb = B.KernelBuilder("reload", local_size=(4, 1, 1))
    buf = kb.buffer("buf", T.int32, "readwrite")
    with kb:
        i = B.global_id(0)
        before = buf[i]
        buf[i] = before + 1
        buf[i] = buf[i] * 10  # reads the stored value, not ``before``
    kernel = _checked(kb.finish())
    assert _ops(kernel).count("load") == 2
    got = _run(kernel, buf=np.arange(4, dtype=np.int32))
    np.testing.assert_array_equal(got["buf"], (np.arange(4) + 1) * 10)


def test_only_dominating_values_are_reused():
    kb = B.KernelBuilder("scopes", local_size=(4, 1, 1))
    x = kb.buffer("x", T.uint32, "read")
    out = kb.buffer("out", T.uint32, "write")
    with kb:
        i = B.global_id(0)
        v = x[i]
        outer = v * 3
        with B.if_(v > 1):
            assert v * 3 is outer  # the outer block's value dominates the nested one
            inner = v + 7
            out[i] = inner
        assert v + 7 is not inner  # the branch is closed: its value is out of scope
        then_value, else_value = [], []
        (picked,) = B.if_else(
            v > 2,
            lambda: then_value.append(v * 5) or then_value[0],
            lambda: else_value.append(v * 5) or else_value[0],
        )
        assert then_value[0] is not else_value[0]  # sibling branches share nothing
        total = B.loop(0, 2, 1, (v,), lambda k, acc: acc + v * 3)  # the loop body reuses ``outer``
        with B.if_(v <= 1):
            out[i] = picked + total[0] + outer
    kernel = _checked(kb.finish())
    data = np.arange(4, dtype=np.uint32)
    got = _run(kernel, x=data, out=np.zeros(4, np.uint32))
    expected = np.where(data > 1, data + 7, data * 5 + (data + 6 * data) + data * 3)
    np.testing.assert_array_equal(got["out"], expected)


def test_kernels_never_share_values():
    outer_kb = B.KernelBuilder("outer", local_size=(1, 1, 1))
    out = outer_kb.buffer("out", T.uint32, "write")
    with outer_kb:
        i = B.global_id(0)
        inner_kb = B.KernelBuilder("inner", local_size=(1, 1, 1))
        inner_out = inner_kb.buffer("out", T.uint32, "write")
        with inner_kb:  # a kernel built while another is open (a template made on first use)
            j = B.global_id(0)
            assert j is not i
            inner_out[j] = j
        out[i] = i + 1
    with outer_kb:  # entered again, it goes on merging with its body
        assert B.global_id(0) is i
    for kernel in (outer_kb.finish(), inner_kb.finish()):
        _checked(kernel)
