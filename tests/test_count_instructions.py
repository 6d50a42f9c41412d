"""bench/count_instructions.py: the classes it counts, and the hot kernels it guards.

Hopper converts and rounds floats at 1/8 of its float32 add rate, so the softmax row kernel and
exp's elementwise kernel must keep none per element (the magic-number rounding of mathlib/bits.py).
"""

from __future__ import annotations

import count_instructions as C  # noqa: E402

from vkml.ir import builder as B  # noqa: E402
from vkml.ir import types as T  # noqa: E402


def _classes(fn) -> dict:
    kb = B.KernelBuilder("k", local_size=(1, 1, 1))
    a = kb.buffer("a", T.float32, "read")
    with kb:
        fn(a[B.global_id(0)])
    return {i.op: C.instruction_class(i) for i in C.fast_path(kb.finish().body)}


def test_classes_of_instructions():
    got = _classes(lambda x: (B.convert(x, T.int32), B.round_even(x), x * x, B.bitcast(x, T.uint32) + 1))
    assert got["convert"] == "conversion" and got["round_even"] == "conversion"
    assert got["mul"] == "float" and got["add"] == "int" and got["bitcast"] is None
    same_width = _classes(lambda x: B.convert(B.bitcast(x, T.uint32), T.int32))
    assert same_width["convert"] is None  # codegen emits a bitcast


def test_softmax_row_kernel_and_exp_have_no_conversions_per_element(capsys):
    (softmax,) = C.h200_dispatches("softmax", (4, 8192), 1)
    counts, elements = C.per_element(softmax, 4 * 8192)
    assert elements == 16 and softmax.kernel.name.startswith("R_")  # one row kernel, the H200's layout
    assert counts["conversion"] == 0 and counts["float"] / elements < 80
    (exp,) = C.h200_dispatches("exp", (4096,), None)
    assert C.count(exp.kernel)["conversion"] == 0
    C.main(["softmax", "--shape", "4,8192", "--dim", "1"])
    out = capsys.readouterr().out
    assert "per element, marginal:" in out and "slots" in out
