"""Scalar types of the kernel IR; the same objects are vkml's tensor dtypes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class DType:
    """A scalar type. ``name`` is PyTorch's spelling, ``short`` the IR text's."""

    name: str
    short: str
    kind: str  # "float" | "int" | "uint" | "bool" | "complex"
    nbytes: int

    @property
    def np(self) -> np.dtype:
        return np.dtype(_NUMPY_NAMES[self.name])

    @property
    def value_np(self) -> np.dtype:
        """The numpy dtype that holds this dtype's values exactly: ``np``, but float32 for bfloat16
        (whose ``np`` holds its bits)."""
        return np.dtype(np.float32) if self.name == "bfloat16" else self.np

    @property
    def bits(self) -> int:
        return 8 * self.nbytes

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        # PyTorch's torch.dtype.is_signed: floats and signed integers. Every IR use asks it of an
        # integer type (conversions, shifts, comparisons), where it tells int from uint.
        return self.kind in ("int", "float", "complex")

    # PyTorch's torch.dtype attributes, for user code (``if t.dtype.is_floating_point: ...``)
    @property
    def is_floating_point(self) -> bool:
        return self.kind == "float"

    @property
    def is_complex(self) -> bool:
        return self.kind == "complex"

    @property
    def itemsize(self) -> int:
        return self.nbytes

    def __repr__(self) -> str:
        return f"vkml.{self.name}"

    def __reduce__(self):
        return (by_name, (self.name,))


float32 = DType("float32", "f32", "float", 4)
float16 = DType("float16", "f16", "float", 2)
int32 = DType("int32", "i32", "int", 4)
uint32 = DType("uint32", "u32", "uint", 4)
int64 = DType("int64", "i64", "int", 8)
bool_ = DType("bool", "bool", "bool", 1)
float64 = DType("float64", "f64", "float", 8)
uint8 = DType("uint8", "u8", "uint", 1)
int8 = DType("int8", "i8", "int", 1)
int16 = DType("int16", "i16", "int", 2)
uint16 = DType("uint16", "u16", "uint", 2)
# bfloat16 is a storage type only: kernels carry it as float32 (vkml/ops/cast.py) and buffers hold its
# 16 bits as int16, so no IR value and no SPIR-V type is ever bfloat16. Its numpy form is those bits (int16).
bfloat16 = DType("bfloat16", "bf16", "float", 2)

# PyTorch's uint64 as a dtype object only: no IR type and no vkml tensor has it (vkml/frontend/dtype_info.py
# refuses it where a tensor would be made), so it is in none of the tables below.
uint64 = DType("uint64", "u64", "uint", 8)

# The IR's value types (ALL); then the types of buffer elements only (loaded, they are converted to a
# wide integer); then the tensor dtypes that are no IR type at all.
ALL = (float32, float16, int32, uint32, int64, bool_, float64)
STORAGE_ONLY = (uint8, int8, int16, uint16)
TENSOR_ONLY = (bfloat16,)
# The complex dtypes: tensor dtypes only, never an IR type. A complex tensor's storage is a float tensor
# with a trailing dim of 2 (real, imaginary): docs/complex.md, vkml/frontend/complex.py.
complex64 = DType("complex64", "c64", "complex", 8)
complex128 = DType("complex128", "c128", "complex", 16)
COMPLEX = (complex64, complex128)
_NUMPY_NAMES = {
    "complex64": "complex64",
    "complex128": "complex128",
    "float32": "float32",
    "float16": "float16",
    "int32": "int32",
    "uint32": "uint32",
    "int64": "int64",
    "bool": "bool",
    "float64": "float64",
    "uint8": "uint8",
    "int8": "int8",
    "int16": "int16",
    "uint16": "uint16",
    "uint64": "uint64",
    "bfloat16": "int16",
}
_KNOWN = ALL + STORAGE_ONLY + TENSOR_ONLY
_BY_NAME = {t.name: t for t in _KNOWN + COMPLEX} | {t.short: t for t in _KNOWN + COMPLEX}


def storage(dtype: DType) -> DType:
    """The IR element type of a buffer holding ``dtype``: bfloat16's 16 bits are held as int16."""
    return int16 if dtype is bfloat16 else dtype


def by_name(name: str) -> DType:
    """The DType called ``name`` (``"float32"`` or ``"f32"``)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise TypeError(f"unknown dtype {name!r}; known: {', '.join(t.name for t in _KNOWN)}") from None


def from_numpy(dt) -> DType:
    """The DType of a numpy dtype."""
    name = np.dtype(dt).name
    if name not in _BY_NAME:
        raise TypeError(f"numpy dtype {name} has no vkml dtype")
    return _BY_NAME[name]


# ---------------------------------------------------------------- cooperative matrices

MATRIX_USES = ("a", "b", "acc")  # SPIR-V MatrixAKHR, MatrixBKHR, MatrixAccumulatorKHR
# Who holds a matrix: a subgroup (VK_KHR_cooperative_matrix) or the whole workgroup (VK_NV_cooperative_matrix2).
MATRIX_SCOPES = ("subgroup", "workgroup")


@dataclass(frozen=True, eq=False)
class MatrixType:
    """A cooperative matrix: ``rows × cols`` of ``elem``, for one ``use``, held by a ``scope``.

    ``use`` is the operand it can be of ``cm_mul_add``: ``"a"`` (M×K), ``"b"`` (K×N) or
    ``"acc"`` (M×N, the accumulator and result). ``scope`` is ``"subgroup"`` (one value per
    subgroup, VK_KHR_cooperative_matrix) or ``"workgroup"`` (one per workgroup, any size the
    device's flexible-dimension list allows: VK_NV_cooperative_matrix2; its text name ends in
    ``_wg``). Instances are interned (``matrix_type``), so types compare with ``is`` like
    scalar ``DType``s.

    >>> matrix_type(float16, 16, 16, "a").short, matrix_type(float32, 128, 128, "acc", "workgroup").short
    ('cm_a_f16_16x16', 'cm_acc_f32_128x128_wg')
    """

    elem: DType
    rows: int
    cols: int
    use: str
    scope: str = "subgroup"

    kind = "matrix"
    is_float = is_int = is_signed = False

    @property
    def short(self) -> str:
        text = f"cm_{self.use}_{self.elem.short}_{self.rows}x{self.cols}"
        return text + ("_wg" if self.scope == "workgroup" else "")

    name = short

    def __repr__(self) -> str:
        return f"vkml.ir.{self.short}"

    def __reduce__(self):
        return (matrix_type, (self.elem, self.rows, self.cols, self.use, self.scope))

    def like(self, elem: DType) -> MatrixType:
        """The same matrix type with elements ``elem`` (what a conversion gives)."""
        return matrix_type(elem, self.rows, self.cols, self.use, self.scope)


_MATRIX_TYPES: dict[tuple, MatrixType] = {}


def matrix_type(elem: DType, rows: int, cols: int, use: str, scope: str = "subgroup") -> MatrixType:
    """The (interned) cooperative-matrix type; raises TypeError for an unknown use, scope or element type."""
    bad = use not in MATRIX_USES or scope not in MATRIX_SCOPES or elem not in (float16, float32)
    if bad or rows < 1 or cols < 1:
        raise TypeError(f"no cooperative matrix of {elem!r} {rows}x{cols} for use {use!r} and scope {scope!r}")
    key = (elem.name, int(rows), int(cols), use, scope)
    found = _MATRIX_TYPES.get(key)
    if found is None:  # setdefault: threads compiling kernels at once (runtime pipelines) get one object
        found = _MATRIX_TYPES.setdefault(key, MatrixType(elem, int(rows), int(cols), use, scope))
    return found


def is_matrix(t) -> bool:
    return isinstance(t, MatrixType)


def value_type(name: str) -> DType | MatrixType:
    """The scalar type or cooperative-matrix type the IR text calls ``name`` (``f32``, ``cm_acc_f32_16x16``,
    ``cm_a_f16_128x64_wg``)."""
    if name.startswith("cm_"):
        parts = name.split("_")
        scope = "workgroup" if len(parts) == 5 and parts[4] == "wg" else "subgroup"
        if len(parts) == 4 + (scope == "workgroup") and parts[3].count("x") == 1:
            rows, _, cols = parts[3].partition("x")
            if rows.isdigit() and cols.isdigit():
                return matrix_type(by_name(parts[2]), int(rows), int(cols), parts[1], scope)
        raise TypeError(f"unknown matrix type {name!r}; write cm_<a|b|acc>_<f16|f32>_<rows>x<cols>[_wg]")
    return by_name(name)
