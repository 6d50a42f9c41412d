"""Exact float32 comparisons on the bits, for devices that may flush subnormals in comparisons.

Without DenormPreserve a driver may treat subnormal operands of a float comparison as zero
(measured on NVIDIA's driver: ``0 == 1e-45`` was true), while the IR defines comparisons exactly,
as numpy computes them. So on such devices each float32 comparison is emitted as integer
instructions: a sign-magnitude to two's-order key (with -0 folded onto +0), an unsigned
compare of the keys, and the NaN rule (ordered: false with a NaN; unordered: true).
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.core import Instr

ORDERED = {
    "lt": "OpULessThan",
    "le": "OpULessThanEqual",
    "gt": "OpUGreaterThan",
    "ge": "OpUGreaterThanEqual",
    "eq": "OpIEqual",
}
# unordered x = not (ordered complement of x)
UNORDERED = {"ult": "ge", "ule": "gt", "ugt": "le", "uge": "lt", "ne": "eq"}


def wanted(ins: Instr) -> bool:
    """Whether ``ins`` is a float32 comparison (emitted on the bits where subnormals may flush)."""
    return (ins.op in ORDERED or ins.op in UNORDERED) and ins.args[0].dtype is T.float32


def _key_and_nan(em, value: str) -> tuple[str, str]:
    u32, boolean = em.mod.scalar(T.uint32), em.mod.scalar(T.bool_)
    bits = em.op("OpBitcast", em.temp("cmp_bits"), u32, value)
    magnitude = em.op("OpBitwiseAnd", em.temp("cmp_mag"), u32, bits, em.mod.uint(0x7FFFFFFF))
    is_zero = em.op("OpIEqual", em.temp("cmp_zero"), boolean, magnitude, em.mod.uint(0))
    canon = em.op("OpSelect", em.temp("cmp_canon"), u32, is_zero, em.mod.uint(0), bits)
    negative = em.op("OpUGreaterThanEqual", em.temp("cmp_neg"), boolean, canon, em.mod.uint(0x80000000))
    flipped = em.op("OpNot", em.temp("cmp_flip"), u32, canon)
    biased = em.op("OpBitwiseOr", em.temp("cmp_bias"), u32, canon, em.mod.uint(0x80000000))
    key = em.op("OpSelect", em.temp("cmp_key"), u32, negative, flipped, biased)
    nan = em.op("OpUGreaterThan", em.temp("cmp_nan"), boolean, magnitude, em.mod.uint(0x7F800000))
    return key, nan


def emit(em, ins: Instr) -> None:
    boolean = em.mod.scalar(T.bool_)
    ka, nan_a = _key_and_nan(em, em.use(ins.args[0]))
    kb, nan_b = _key_and_nan(em, em.use(ins.args[1]))
    any_nan = em.op("OpLogicalOr", em.temp("cmp_anynan"), boolean, nan_a, nan_b)
    ordered_op = ins.op if ins.op in ORDERED else UNORDERED[ins.op]
    raw = em.op(ORDERED[ordered_op], em.temp("cmp_raw"), boolean, ka, kb)
    not_nan = em.op("OpLogicalNot", em.temp("cmp_ordered"), boolean, any_nan)
    if ins.op in ORDERED:
        em.op("OpLogicalAnd", em.result_id(ins.result), boolean, not_nan, raw)
        return
    holds = em.op("OpLogicalAnd", em.temp("cmp_holds"), boolean, not_nan, raw)
    em.op("OpLogicalNot", em.result_id(ins.result), boolean, holds)


def emit_signed_irem(em, ins: Instr) -> None:
    """Signed remainder as ``a - (a / b) * b`` (OpSDiv): NVIDIA's OpSRem disagreed with it."""
    dtype = ins.result.dtype
    t = em.mod.scalar(dtype)
    a, b = em.use(ins.args[0]), em.use(ins.args[1])
    q = em.op("OpSDiv", em.temp("rem_q"), t, a, b)
    qb = em.op("OpIMul", em.temp("rem_qb"), t, q, b)
    em.op("OpISub", em.result_id(ins.result), t, a, qb)
