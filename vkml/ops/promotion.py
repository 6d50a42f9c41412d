"""Type promotion, following PyTorch: categories bool < integer < float, and operands with
dimensions outrank zero-dimensional tensors, which outrank Python scalars.

    >>> from vkml.ir.types import int32, float16
    >>> promote_types(int32, float16)
    vkml.float16
"""

from __future__ import annotations

from ..errors import DTypeError
from ..ir import types as T

_CATEGORY = {
    T.bool_: 0,
    T.uint8: 1,
    T.int8: 1,
    T.int16: 1,
    T.uint16: 1,
    T.int32: 1,
    T.uint32: 1,
    T.int64: 1,
    T.float16: 2,
    T.bfloat16: 2,
    T.float32: 2,
    T.float64: 2,
}
_DEFAULT_OF_CATEGORY = {0: T.bool_, 1: T.int64, 2: T.float32}  # 2: the default float (set_default_float)
# Within a category the wider type wins; the pairs where neither holds the other are PyTorch's
# exceptions: uint8 and int8 meet in int16, float16 and bfloat16 in float32.
_RANK_IN_CATEGORY = {
    T.bool_: 0,
    T.uint8: 0,
    T.int8: 0,
    T.int16: 1,
    T.uint16: 1,
    T.int32: 2,
    T.uint32: 3,
    T.int64: 4,
    T.float16: 0,
    T.bfloat16: 0,
    T.float32: 1,
    T.float64: 2,
}
_NEITHER = {frozenset((T.uint8, T.int8)): T.int16, frozenset((T.float16, T.bfloat16)): T.float32}


def category(dtype: T.DType) -> int:
    return _CATEGORY[dtype]


# PyTorch's ScalarType names, as its promotion error prints them.
_SCALAR_TYPES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "uint16": "UInt16"}
_SCALAR_TYPES |= {"int32": "Int", "int64": "Long", "uint32": "UInt32", "uint64": "UInt64"}
_SCALAR_TYPES |= {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double"}


def scalar_type_name(dtype: T.DType) -> str:
    """PyTorch's ScalarType name of ``dtype`` (``Long`` for int64), as its dtype errors print it."""
    return _SCALAR_TYPES.get(dtype.name, dtype.name)


def promote_types(a: T.DType, b: T.DType) -> T.DType:
    """The smallest dtype both ``a`` and ``b`` convert to (``torch.promote_types``)."""
    if T.uint16 in (a, b) and a is not b and not (a.is_float or b.is_float):
        # PyTorch has no promotion of uint16 with another integer or bool dtype (only with floats)
        raise RuntimeError(
            "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
            f"{_SCALAR_TYPES[a.name]} and {_SCALAR_TYPES[b.name]}"
        )
    ca, cb = _CATEGORY[a], _CATEGORY[b]
    if ca != cb:
        return a if ca > cb else b
    if _RANK_IN_CATEGORY[a] == _RANK_IN_CATEGORY[b] and a is not b:
        return _NEITHER[frozenset((a, b))]
    return a if _RANK_IN_CATEGORY[a] >= _RANK_IN_CATEGORY[b] else b


def default_float() -> T.DType:
    """The dtype of Python floats and of float results from integers (``torch.get_default_dtype``)."""
    return _DEFAULT_OF_CATEGORY[2]


def set_default_float(dtype: T.DType) -> None:
    """Make ``dtype`` the default float; the graph's cached promotion decisions must be dropped too
    (vkml/frontend/defaults.py does both)."""
    _DEFAULT_OF_CATEGORY[2] = dtype


def scalar_dtype(value) -> T.DType:
    """The dtype PyTorch gives a Python scalar: bool, int64 or the default float (float32 unless set)."""
    if isinstance(value, bool):
        return T.bool_
    if isinstance(value, int):
        return T.int64
    if isinstance(value, float):
        return _DEFAULT_OF_CATEGORY[2]
    raise DTypeError(f"unsupported Python scalar {value!r} ({type(value).__name__})")


def result_type(dim_dtypes: list[T.DType], zero_dim_dtypes: list[T.DType], scalars: list) -> T.DType:
    """PyTorch's ``result_type`` over tensors with dims, 0-dim tensors and Python scalars."""
    state = None
    for dt in dim_dtypes:
        state = dt if state is None else promote_types(state, dt)
    for group, is_scalar in ((zero_dim_dtypes, False), ([scalar_dtype(s) for s in scalars], True)):
        best = None
        for dt in group:
            best = dt if best is None else promote_types(best, dt)
        if best is None:
            continue
        if state is None:
            state = _DEFAULT_OF_CATEGORY[_CATEGORY[best]] if is_scalar and best is not T.bool_ else best
        elif _CATEGORY[best] > _CATEGORY[state]:
            state = _DEFAULT_OF_CATEGORY[_CATEGORY[best]] if is_scalar else best
    return state
