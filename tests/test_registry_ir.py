"""Every registered op lowers to kernels that verify and survive the text round trip.

For each elementwise op and each dtype it supports, the kernel that computes it (as the
scheduler lowers it) must pass ``vkml.ir.verify`` and satisfy ``parse(str(k)) == k``; the
same for every pass of every reduction, and for casts between tensor dtypes.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import vkml
from vkml.graph import build as lazy
from vkml.graph.node import Node
from vkml.ir import types as T
from vkml.kernels.tuning import CPU_TUNING
from vkml.ops.elementwise import CAST_DTYPES
from vkml.ops.registry import REGISTRY, ops_of_kind
from vkml.schedule import scheduler as schedule


def _leaf(dtype: T.DType, shape=(2, 3)) -> Node:
    values = np.arange(int(np.prod(shape))).reshape(shape) % 3
    return vkml.tensor(values, dtype=dtype).node


def _kernels(root: Node) -> list:
    """The kernels the scheduler makes for ``root`` on the CPU device (nothing runs)."""
    dispatches, _, _ = schedule.lower(schedule.Plan([root]))
    assert dispatches, f"no kernel for {root!r}"
    return [d.kernel for d in dispatches]


def _assert_round_trip(kernel, what: str) -> None:
    vkml.ir.verify(kernel)
    text = str(kernel)
    again = vkml.ir.parse(text)
    assert again == kernel, f"{what}: parse(str(k)) != k\n{text}"
    assert str(again) == text


def _elementwise_cases():
    for op in ops_of_kind("elementwise"):
        for dtype in op.dtypes:
            yield pytest.param(op.name, dtype, id=f"{op.name}-{dtype.name}")


@pytest.mark.parametrize("name, dtype", list(_elementwise_cases()))
def test_elementwise_kernel_verifies_and_round_trips(name, dtype):
    op = REGISTRY[name]
    arity = len(inspect.signature(op.body).parameters)
    operands = [_leaf(dtype) for _ in range(arity)]
    if name == "where":
        operands[0] = _leaf(T.bool_)
    root = lazy.elementwise(name, operands)
    for kernel in _kernels(root):
        _assert_round_trip(kernel, f"{name} on {dtype.name}")


def _reduce_cases():
    for op in ops_of_kind("reduce"):
        for dtype in op.dtypes:
            yield pytest.param(op.name, dtype, id=f"{op.name}-{dtype.name}")


@pytest.mark.parametrize("name, dtype", list(_reduce_cases()))
def test_reduce_kernels_verify_and_round_trip(name, dtype):
    # Three rows of three chunks and a tail (the CPU's chunk: 64 lanes of 16): two passes (block
    # partials, then the final tree) plus a fused consumer.
    chunk = CPU_TUNING.reduce_lanes * CPU_TUNING.reduce_per_lane
    node = lazy.reduce(name, _leaf(dtype, (3, 3 * chunk + 5)), 1, False)
    kernels = _kernels(node)
    assert len(kernels) == 2, f"{name}: expected a two-pass reduction, got {len(kernels)} kernels"
    for kernel in kernels:
        _assert_round_trip(kernel, f"{name} over {dtype.name}")
    if dtype.is_float:
        consumer = lazy.elementwise("mul", [lazy.reduce(name, _leaf(dtype, (4, 5)), 0, True), 2.0])
        for kernel in _kernels(consumer):
            _assert_round_trip(kernel, f"{name} fused with a consumer")


@pytest.mark.parametrize("src", CAST_DTYPES, ids=lambda d: d.name)
def test_cast_kernels_verify_and_round_trip(src):
    for dst in CAST_DTYPES:
        if dst is not src:
            for kernel in _kernels(lazy.cast_node(_leaf(src), dst)):
                _assert_round_trip(kernel, f"{src.name} -> {dst.name}")


def test_movement_and_cat_kernels_verify_and_round_trip():
    x = vkml.tensor(np.arange(24, dtype=np.float16).reshape(2, 3, 4))
    for view in (x.permute(2, 0, 1), x[1, :, ::2].flip(0), x[:, :1].expand(2, 5, 4).reshape(10, 4)):
        for kernel in _kernels((view + 1).node):
            _assert_round_trip(kernel, "view")
    for kernel in _kernels(vkml.cat([x, x.flip(1)], 1).node):
        _assert_round_trip(kernel, "cat")
