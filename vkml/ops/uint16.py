"""The ops PyTorch's CPU kernels take on uint16 tensors, and so vkml's.

PyTorch 2.x exposes uint16 with few kernels: conversion, movement and creation (which vkml's
nodes do for every dtype), and the registered ops below. Every other op refuses a uint16
tensor with the DTypeError that names the op and its dtypes, where PyTorch raises
NotImplementedError; and a uint16 tensor does not promote with another integer or bool dtype
(vkml/ops/promotion.py), as in PyTorch. A uint16 element is carried as int32 and wrapped after
each op (vkml/ops/cast.py), as uint8's.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir import types as T
from .registry import REGISTRY

UINT16_OPS = ("mul", "eq", "ne", "where", "bitwise_and", "bitwise_or", "bitwise_xor", "sum", "prod")

for _name in UINT16_OPS:
    _op = REGISTRY[_name]
    REGISTRY[_name] = replace(_op, dtypes=_op.dtypes + (T.uint16,))
