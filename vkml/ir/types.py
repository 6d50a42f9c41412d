"""Scalar types of the kernel IR; the same objects are vkml's tensor dtypes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class DType:
    """A scalar type. ``name`` is PyTorch's spelling, ``short`` the IR text's."""

    name: str
    short: str
    kind: str  # "float" | "int" | "uint" | "bool"
    nbytes: int

    @property
    def np(self) -> np.dtype:
        return np.dtype(_NUMPY_NAMES[self.name])

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
        return self.kind == "int"

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

ALL = (float32, float16, int32, uint32, int64, bool_)
_NUMPY_NAMES = {
    "float32": "float32",
    "float16": "float16",
    "int32": "int32",
    "uint32": "uint32",
    "int64": "int64",
    "bool": "bool",
}
_BY_NAME = {t.name: t for t in ALL} | {t.short: t for t in ALL}


def by_name(name: str) -> DType:
    """The DType called ``name`` (``"float32"`` or ``"f32"``)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise TypeError(f"unknown dtype {name!r}; known: {', '.join(t.name for t in ALL)}") from None


def from_numpy(dt) -> DType:
    """The DType of a numpy dtype (float64 is not one: callers narrow it first)."""
    name = np.dtype(dt).name
    if name not in _BY_NAME:
        raise TypeError(f"numpy dtype {name} has no vkml dtype")
    return _BY_NAME[name]
