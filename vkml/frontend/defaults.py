"""The default float dtype (``set_default_dtype`` / ``get_default_dtype``), as in PyTorch (the type
predicates ``is_tensor`` and ``is_floating_point`` are in type_queries.py).

The default float is what Python floats become (``vkml.tensor([1.5])``, ``x_int * 0.5``), what
float creation functions make without a ``dtype`` (``zeros``, ``rand``, ``arange(0.5, ...)``,
the parameters of ``nn`` layers) and what integer inputs of float ops give (``int / int``,
``sqrt(int)``): float32 unless set to float64, float16 or bfloat16. Like PyTorch's, the setting
is process-wide.

>>> import vkml
>>> vkml.get_default_dtype()
vkml.float32
>>> vkml.set_default_dtype(vkml.float16)
>>> vkml.tensor([1.5]).dtype, (vkml.arange(3) / 2).dtype
(vkml.float16, vkml.float16)
>>> vkml.set_default_dtype(vkml.float32)
"""

from __future__ import annotations

from ..graph import build as lazy
from ..ir import types as T
from ..ops import promotion


def get_default_dtype() -> T.DType:
    """The default float dtype: float32 unless ``set_default_dtype`` changed it."""
    return promotion.default_float()


def set_default_dtype(d: T.DType) -> None:
    """Make ``d`` (any float dtype: float32, float64, float16, bfloat16) the default float dtype,
    for the whole process. Anything but a float dtype raises PyTorch's TypeError.
    """
    if not isinstance(d, T.DType) or not d.is_float:
        raise TypeError("only floating-point types are supported as the default type")
    if d is promotion.default_float():
        return
    promotion.set_default_float(d)
    lazy.forget_promotion_decisions()
