"""The code generator as data: IR instruction name + operand kind -> SPIR-V opcode.

The operand kind is the IR dtype's ``kind`` (``"float" | "int" | "uint" | "bool"``) of the
first operand (for ``select``: of the chosen values). A name that does not start with ``Op``
is a GLSL.std.450 extended instruction. Instructions that need more than one SPIR-V
instruction or pick their opcode from two types (``convert``, ``f16_from_bits``,
``f16_to_bits``) are special cases in ``spirv.py``.

    opcode("lt", T.uint32)   # 'OpULessThan'
"""

from __future__ import annotations

from ..ir.types import DType

_NUMBERS = ("float", "int", "uint")
_INTS = ("int", "uint")
_ANY = ("float", "int", "uint", "bool")


def _by_kind(float_op: str | None = None, signed: str | None = None, unsigned: str | None = None, logical=None):
    row = {"float": float_op, "int": signed, "uint": unsigned, "bool": logical}
    return {kind: op for kind, op in row.items() if op is not None}


def _same_for(kinds: tuple[str, ...], op: str) -> dict[str, str]:
    return dict.fromkeys(kinds, op)


OPCODES: dict[str, dict[str, str]] = {
    "add": _by_kind("OpFAdd", "OpIAdd", "OpIAdd"),
    "sub": _by_kind("OpFSub", "OpISub", "OpISub"),
    "mul": _by_kind("OpFMul", "OpIMul", "OpIMul"),
    "neg": _by_kind(None, "OpSNegate", "OpSNegate"),  # float neg: see SPECIAL
    "idiv": _by_kind(None, "OpSDiv", "OpUDiv"),
    "irem": _by_kind(None, "OpSRem", "OpUMod"),
    # comparisons: ordered for floats, except ne which is true when either side is NaN
    "eq": _by_kind("OpFOrdEqual", "OpIEqual", "OpIEqual", "OpLogicalEqual"),
    "ne": _by_kind("OpFUnordNotEqual", "OpINotEqual", "OpINotEqual", "OpLogicalNotEqual"),
    "lt": _by_kind("OpFOrdLessThan", "OpSLessThan", "OpULessThan"),
    "le": _by_kind("OpFOrdLessThanEqual", "OpSLessThanEqual", "OpULessThanEqual"),
    "gt": _by_kind("OpFOrdGreaterThan", "OpSGreaterThan", "OpUGreaterThan"),
    "ge": _by_kind("OpFOrdGreaterThanEqual", "OpSGreaterThanEqual", "OpUGreaterThanEqual"),
    "ult": _by_kind("OpFUnordLessThan"),
    "ule": _by_kind("OpFUnordLessThanEqual"),
    "ugt": _by_kind("OpFUnordGreaterThan"),
    "uge": _by_kind("OpFUnordGreaterThanEqual"),
    "isnan": _by_kind("OpIsNan"),
    "select": _same_for(_ANY, "OpSelect"),
    "and": _by_kind(None, "OpBitwiseAnd", "OpBitwiseAnd", "OpLogicalAnd"),
    "or": _by_kind(None, "OpBitwiseOr", "OpBitwiseOr", "OpLogicalOr"),
    "xor": _by_kind(None, "OpBitwiseXor", "OpBitwiseXor", "OpLogicalNotEqual"),
    "not": _by_kind(None, "OpNot", "OpNot", "OpLogicalNot"),
    "shl": _same_for(_INTS, "OpShiftLeftLogical"),
    "shr": _by_kind(None, "OpShiftRightArithmetic", "OpShiftRightLogical"),
    "bitcast": _same_for(_NUMBERS, "OpBitcast"),
    "floor": _by_kind("Floor"),
    "ceil": _by_kind("Ceil"),
    "trunc": _by_kind("Trunc"),
    "round_even": _by_kind("RoundEven"),
    # Not exact (instructions.py): GLSL.std.450 Fma may round once (NVIDIA) or twice (lavapipe).
    "mul_add": _by_kind("Fma"),
}

# IR instructions with their own emitter in spirv.py (several SPIR-V instructions, or an opcode
# chosen from the source and destination types). Float ``neg`` is one: the IR promises a sign-bit
# flip with the NaN payload untouched, but OpFNegate is subject to NaN propagation rules
# (lavapipe quiets float16 signalling NaNs), so it becomes an integer xor of the sign bit.
SPECIAL = frozenset({"convert", "f16_from_bits", "f16_to_bits", "neg"})

# Float arithmetic whose result must be decorated NoContraction, so that no driver fuses,
# reassociates or replaces it (semantics.md §4). Conversions are included: the decoration
# costs nothing and keeps every float-producing or float-consuming arithmetic step pinned.
NO_CONTRACTION = frozenset(
    {
        "OpFAdd",
        "OpFSub",
        "OpFMul",
        "OpFNegate",
        "OpFConvert",
        "OpConvertSToF",
        "OpConvertUToF",
        "OpConvertFToS",
        "OpConvertFToU",
    }
)


def opcode(op: str, operand: DType) -> str:
    """The SPIR-V opcode (or GLSL.std.450 name) of IR instruction ``op`` on ``operand``'s kind."""
    try:
        return OPCODES[op][operand.kind]
    except KeyError:
        raise KeyError(f"no SPIR-V mapping for IR instruction {op!r} on {operand.short}") from None


def convert_opcode(src: DType, dst: DType) -> str:
    """The opcode of ``convert`` from ``src`` to ``dst`` (a pair in ``instructions.CONVERSIONS``).

    Integer conversions extend by the *source's* signedness (numpy semantics: uint32 -> int64
    zero-extends); a same-width integer conversion is a bitcast.
    """
    if src.is_int and dst.is_int:
        if src.nbytes == dst.nbytes:
            return "OpBitcast"
        return "OpSConvert" if src.is_signed else "OpUConvert"
    if src.is_int and dst.is_float:
        return "OpConvertSToF" if src.is_signed else "OpConvertUToF"
    if src.is_float and dst.is_int:
        return "OpConvertFToS" if dst.is_signed else "OpConvertFToU"
    if src.is_float and dst.is_float:  # f16 -> f32, f32 <-> f64 (rounding to nearest even: RoundingModeRTE)
        return "OpFConvert"
    raise KeyError(f"no SPIR-V conversion {src.short} -> {dst.short}")
