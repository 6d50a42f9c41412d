"""Whether a device can hold a dtype: checked where a tensor of a dtype first reaches a device.

A Vulkan device without shaderFloat64 (or 8/16-bit storage, shaderInt8/shaderInt16) cannot
hold float64 (uint8, int8; int16, bfloat16) tensors; vkml refuses them at the op, naming the
dtype and the missing feature, instead of computing in another type (docs/dtypes.md).
PyTorch raises TypeError for a dtype a backend lacks (float64 on MPS), so this is a DTypeError.
"""

from __future__ import annotations

from ..errors import DTypeError
from ..ir import types as T
from ..ops import promotion


def check_device_dtype(op: str, dtype: T.DType, device) -> None:
    """Raise DTypeError at ``op`` if ``device`` lacks a feature that ``dtype`` tensors need.

    >>> check_device_dtype("to", vkml.float64, vkml.device("vulkan:0"))  # doctest: +SKIP
    DTypeError: 'to': vulkan:0 cannot hold float64 tensors: the device lacks shaderFloat64 ...
    """
    features = getattr(device, "features", None)  # the CPU device holds every dtype
    if features is None:
        return
    missing = features.missing_for_dtype(dtype.name)
    if missing:
        raise DTypeError(
            f"'{op}': {device.name} cannot hold {dtype.name} tensors: the device lacks {', '.join(missing)}; "
            "keep them on the CPU or convert them to a dtype the device has"
        )


def promote_types(type1: T.DType, type2: T.DType) -> T.DType:
    """The smallest dtype both convert to, as ``torch.promote_types`` (uint8 and int8 meet in int16,
    float16 and bfloat16 in float32).

    >>> vkml.promote_types(vkml.uint8, vkml.int8)
    vkml.int16
    """
    for name, value in (("type1", type1), ("type2", type2)):
        if not isinstance(value, T.DType):
            raise TypeError(f"promote_types(): argument '{name}' must be a vkml dtype, not {value!r}")
    unsigned = (T.uint32, T.uint64)  # dtype objects only (vkml/frontend/dtype_info.py): PyTorch's rule here
    if type1 in unsigned or type2 in unsigned:
        if type1 is type2 or type1.is_float or type2.is_float:
            return type2 if type2.is_float else type1
        names = promotion._SCALAR_TYPES
        raise RuntimeError(
            "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
            f"{names[type1.name]} and {names[type2.name]}"
        )
    return promotion.promote_types(type1, type2)


# PyTorch's argument parser reads the Python number types as dtypes wherever a dtype is asked for
# (``torch.ones(2, dtype=bool)``, ``x.to(float)``, ``x.sum(dtype=int)``): float is float64 and int
# int64 whatever the default dtype, as for a tensor made from those Python numbers' numpy arrays.
_PYTHON_TYPES = {bool: T.bool_, int: T.int64, float: T.float64, complex: T.complex128}


def python_type_dtype(value):
    """The dtype a Python number type stands for (``bool``, ``int``, ``float``, ``complex``) as a
    ``dtype=`` argument, or ``value`` unchanged when it is not one of them.

    >>> python_type_dtype(float)
    vkml.float64
    """
    if isinstance(value, type):
        return _PYTHON_TYPES.get(value, value)
    return value
