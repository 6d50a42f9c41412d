"""The module-level sections of a SPIR-V assembly file: capabilities, names, decorations,
types, constants and global variables.

Every type, constant and variable gets a readable id derived from what it is
(``%float``, ``%_ptr_StorageBuffer_uint``, ``%uint_3``, ``%float_0x3fc00000``), so declaring
the same thing twice returns the same id and the output is deterministic. Dependencies are
declared before their users, so one ordered list is a valid types-and-globals section.

    mod = ModuleBuilder()
    mod.constant(T.float32, np.float32(1.5))   # '%float_0x3fc00000'
"""

from __future__ import annotations

import numpy as np

from ..ir import types as T
from ..ir.types import DType

SCALAR_IDS = {
    "float32": "%float",
    "float16": "%half",
    "int32": "%int",
    "uint32": "%uint",
    "int64": "%long",
    "bool": "%bool",
    "float64": "%double",
    "uint8": "%uchar",
    "int8": "%char",
    "int16": "%short",
    "uint16": "%ushort",
}
_SCALAR_DECLS = {
    "float32": "OpTypeFloat 32",
    "float16": "OpTypeFloat 16",
    "int32": "OpTypeInt 32 1",
    "uint32": "OpTypeInt 32 0",
    "int64": "OpTypeInt 64 1",
    "bool": "OpTypeBool",
    "float64": "OpTypeFloat 64",
    "uint8": "OpTypeInt 8 0",
    "int8": "OpTypeInt 8 1",
    "int16": "OpTypeInt 16 1",
    "uint16": "OpTypeInt 16 0",
}


def float_literal(value: np.floating) -> str:
    """A SPIR-V assembly literal with exactly the bits of ``value`` (NaN payloads, -0.0, subnormals).

    >>> float_literal(np.float32(1.5)), float_literal(np.float32("nan"))
    ('0x1.8p+0', '0x1.8p+128')
    """
    bits = int(value.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[value.nbytes]))
    mant_bits = {2: 10, 4: 23, 8: 52}[value.nbytes]
    exp_all_ones = (1 << (8 * value.nbytes - 1 - mant_bits)) - 1
    sign = "-" if bits >> (8 * value.nbytes - 1) else ""
    exponent = (bits >> mant_bits) & exp_all_ones
    if exponent == exp_all_ones:  # inf / NaN: spirv-as reads the maximum exponent + 1 with the payload as mantissa
        mantissa = (bits & ((1 << mant_bits) - 1)) << (4 - mant_bits % 4) % 4
        digits = f"{mantissa:0{(mant_bits + 3) // 4}x}".rstrip("0") or "0"
        max_exp = exp_all_ones // 2 + 1
        return f"{sign}0x1.{digits}p+{max_exp}"
    # Finite values are exact in a double; its hex form keeps -0.0 and subnormals.
    mantissa, exponent = float(value).hex().split("p")
    return f"{mantissa.rstrip('0').rstrip('.')}p{exponent}"


class ModuleBuilder:
    """Collects the module-level declarations of one kernel's SPIR-V."""

    def __init__(self) -> None:
        self.capabilities: dict[str, None] = {"Shader": None}  # dicts keep insertion order, dedup
        self.extensions: dict[str, None] = {}
        self.names: list[str] = []
        self.decorations: dict[str, None] = {}
        self.declarations: list[str] = []
        self.interface: list[str] = []  # global variables the entry point lists
        self.input_interface: list[str] = []  # the Input ones (all SPIR-V < 1.4 may list)
        self.uses_glsl_std = False
        self.functions: list[str] = []  # functions after the entry point (cm_map's, reductions' combines)
        self._defined: set[str] = set()

    # ------------------------------------------------------------ bookkeeping

    def capability(self, name: str) -> None:
        self.capabilities[name] = None

    def extension(self, name: str) -> None:
        self.extensions[name] = None

    def name(self, id_: str, text: str) -> None:
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        self.names.append(f'OpName {id_} "{escaped}"')

    def decorate(self, id_: str, *words) -> None:
        self.decorations[f"OpDecorate {id_} {' '.join(str(w) for w in words)}"] = None

    def member_decorate(self, id_: str, member: int, *words) -> None:
        self.decorations[f"OpMemberDecorate {id_} {member} {' '.join(str(w) for w in words)}"] = None

    def define(self, id_: str, text: str) -> str:
        """Declare ``id_ = text`` once; return ``id_``."""
        if id_ not in self._defined:
            self._defined.add(id_)
            self.declarations.append(f"{id_} = {text}")
        return id_

    # ------------------------------------------------------------ types

    def void(self) -> str:
        return self.define("%void", "OpTypeVoid")

    def scalar(self, dtype: DType) -> str:
        return self.define(SCALAR_IDS[dtype.name], _SCALAR_DECLS[dtype.name])

    def type_of(self, t) -> str:
        """The type id of a value's IR type: a scalar, or a cooperative matrix."""
        return self.matrix(t) if T.is_matrix(t) else self.scalar(t)

    def matrix(self, t: T.MatrixType) -> str:
        """``OpTypeCooperativeMatrixKHR`` of subgroup (3) or workgroup (2) scope, e.g. ``%cm_a_half_16x16``,
        ``%cm_acc_float_128x128_wg``."""
        elem = self.scalar(t.elem)
        use = {"a": 0, "b": 1, "acc": 2}[t.use]  # MatrixAKHR, MatrixBKHR, MatrixAccumulatorKHR
        workgroup = t.scope == "workgroup"
        scope, rows, cols, use_id = (
            self.uint(2 if workgroup else 3),
            self.uint(t.rows),
            self.uint(t.cols),
            self.uint(use),
        )
        text = f"OpTypeCooperativeMatrixKHR {elem} {scope} {rows} {cols} {use_id}"
        return self.define(f"%cm_{t.use}_{elem[1:]}_{t.rows}x{t.cols}{'_wg' if workgroup else ''}", text)

    def tensor_layout(self, clamp: bool) -> str:
        """``OpTypeTensorLayoutNV`` of two dimensions, clamp mode Constant (outside reads 0) or Undefined."""
        name = "%tensor_layout_clamp" if clamp else "%tensor_layout"
        return self.define(name, f"OpTypeTensorLayoutNV {self.uint(2)} {self.uint(1 if clamp else 0)}")

    def unsigned(self, bits: int) -> str:
        """The unsigned integer type of ``bits`` (``%ulong`` has no IR dtype: OpUConvert needs it)."""
        if bits in (16, 32):  # the IR's own types: one declaration per type (SPIR-V allows no duplicate)
            return self.scalar(T.uint16 if bits == 16 else T.uint32)
        return self.define("%ulong" if bits == 64 else f"%uint{bits}", f"OpTypeInt {bits} 0")

    def vector(self, elem: DType, count: int) -> str:
        base = self.scalar(elem)
        return self.define(f"%v{count}{base[1:]}", f"OpTypeVector {base} {count}")

    def pointer(self, storage: str, pointee: str) -> str:
        return self.define(f"%_ptr_{storage}_{pointee.lstrip('%')}", f"OpTypePointer {storage} {pointee}")

    def function_type(self, result: str | None = None, *params: str) -> str:
        """``OpTypeFunction``: of the entry point (no arguments), or returning ``result`` of ``params`` (type ids)."""
        if result is None:
            return self.define("%fn_void", f"OpTypeFunction {self.void()}")
        name = "%fn_" + "_".join(t.lstrip("%") for t in (result, *params))
        return self.define(name, f"OpTypeFunction {result} {' '.join(params)}")

    def runtime_array(self, elem: DType) -> str:
        """``elem[]`` laid out for a storage buffer (ArrayStride = element size)."""
        base = self.scalar(elem)
        id_ = self.define(f"%_runtimearr_{base[1:]}", f"OpTypeRuntimeArray {base}")
        self.decorate(id_, "ArrayStride", elem.nbytes)
        return id_

    def buffer_struct(self, elem: DType) -> str:
        """The Block struct ``{ elem data[]; }`` every storage buffer of ``elem`` shares."""
        array = self.runtime_array(elem)
        id_ = self.define(f"%Buffer_{self.scalar(elem)[1:]}", f"OpTypeStruct {array}")
        self.decorate(id_, "Block")
        self.member_decorate(id_, 0, "Offset", 0)
        return id_

    def vector_buffer_struct(self, elem: DType, count: int) -> str:
        """The Block struct ``{ vecN<elem> data[]; }``: a second view of a buffer, N elements per entry."""
        vector = self.vector(elem, count)
        array = self.define(f"%_runtimearr_{vector[1:]}", f"OpTypeRuntimeArray {vector}")
        self.decorate(array, "ArrayStride", elem.nbytes * count)
        id_ = self.define(f"%Buffer_{vector[1:]}", f"OpTypeStruct {array}")
        self.decorate(id_, "Block")
        self.member_decorate(id_, 0, "Offset", 0)
        return id_

    def workgroup_array(self, elem: DType, size: int) -> str:
        base = self.scalar(elem)
        return self.define(f"%_arr_{base[1:]}_{size}", f"OpTypeArray {base} {self.uint(size)}")

    def workgroup_vector_array(self, elem: DType, width: int, size: int) -> str:
        vector = self.vector(elem, width)
        return self.define(f"%_arr_{vector[1:]}_{size}", f"OpTypeArray {vector} {self.uint(size)}")

    # ------------------------------------------------------------ constants

    def constant(self, dtype: DType, value) -> str:
        """The id of a constant of ``dtype``; floats are keyed by their bits."""
        if dtype is T.bool_:
            type_id = self.scalar(T.bool_)
            return (
                self.define("%true", f"OpConstantTrue {type_id}")
                if value
                else self.define("%false", f"OpConstantFalse {type_id}")
            )
        type_id = self.scalar(dtype)
        scalar = np.array(value).astype(dtype.np)[()]
        if dtype.is_float:
            bits = int(scalar.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.nbytes]))
            id_ = f"{type_id}_0x{bits:0{2 * dtype.nbytes}x}"
            return self.define(id_, f"OpConstant {type_id} {float_literal(scalar)}")
        number = int(scalar)
        id_ = f"{type_id}_{number}" if number >= 0 else f"{type_id}_m{-number}"
        return self.define(id_, f"OpConstant {type_id} {number}")

    def uint(self, number: int) -> str:
        return self.constant(T.uint32, number)

    # ------------------------------------------------------------ global variables

    def variable(self, id_: str, pointer_type: str, storage: str) -> str:
        if id_ not in self._defined:
            self.interface.append(id_)
            if storage == "Input":
                self.input_interface.append(id_)
        return self.define(id_, f"OpVariable {pointer_type} {storage}")

    def builtin_input(self, builtin: str, scalar: bool = False) -> str:
        """The ``Input`` variable of a uvec3 builtin such as ``GlobalInvocationId`` (a uint one: ``scalar``)."""
        id_ = f"%gl_{builtin}"
        if id_ not in self._defined:
            self.decorate(id_, "BuiltIn", builtin)
            self.name(id_, f"gl_{builtin}")
        pointee = self.scalar(T.uint32) if scalar else self.vector(T.uint32, 3)
        return self.variable(id_, self.pointer("Input", pointee), "Input")
