"""The VK_NV_cooperative_matrix2 matmul template: C = A @ B of row-major float16 matrices on workgroup-scope matrices.

Chosen (``applies``, then ``fits`` on the product's node) for the plain product of two 2-D
float16 operands that kernels load as stored (realized, or computed by a kernel of their own:
no view or cast between), on a device with workgroup-scope matrices of flexible sizes loaded
through tensor layouts (VK_NV_cooperative_matrix2), and before the subgroup-scope
template (kernels_matmul_coopmat), which takes everything else: batched products, views
(``x @ w.T``), fused consumers (those are lowered with it under this mode too), devices
without cm2. ``VKML_MATMUL_COOPMAT2=0`` turns this one off, ``VKML_MATMUL_COOPMAT=0`` both.

The kernel is extra/proto_coopmat2.py's fastest shape (bench/bench_matmul_coopmat.py; figures
in docs/benchmarks.md): one workgroup of ``threads`` invocations owns a ``bm``×``bn``
tile of C as ONE workgroup-scope float32 accumulator; each K-step loads the ``bm``×``bk`` block
of A and the ``bk``×``bn`` block of B straight from the buffers (``cm_tensor_load``: the driver
stages them through shared memory), multiplies and accumulates; the accumulator goes back with
``cm_tensor_store``, converted to float16 in hardware. Tiles are visited ``group`` tile rows at
a time (down each column of the group before the next), so that the workgroups in flight share
rows of A and columns of B in L2. ``unroll`` K-steps are written out per loop iteration (the
prototype's ``u``); the K-steps past the last whole iteration follow in a loop of one K-step an
iteration, so the blocks, their order and the sums are those of ``unroll`` 1. ``VKML_MATMUL_COOPMAT2_SHAPE``
picks another shape for measurements, e.g. ``128x128x64 t128 u2 g16``.

Tails: where M, N or K is not a whole number of tiles the loads clamp (elements past the edge
read +0.0, so padded products are ±0.0 and leave a nonzero sum unchanged) and the store drops
the elements past the edge. Numerics (docs/ops/matmul.md): each output starts from -0.0 and
takes the ``bk``-deep blocks of k in ascending order, a block's products summed in the device's
order and precision; the float32 sum rounds once to float16, round-to-nearest-even (OpFConvert
under RoundingModeRTE 16, not the software narrowing: the same rounding, subnormals kept). The
CPU interpreter runs this same kernel with its ``cm_mul_add`` order: the scalar template's sums.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ... import config as vkml_config
from ...graph.node import Node, Op
from ...ir import builder as B
from ...ir import types as T
from ...ir.core import Value
from ..lowering import BufferKind, BufferRole, GroupTemplate, Lowering, _u32, fold_grid, kernel_name, linear_workgroup
from .tiled import _maybe_if

MODE = "matmul coopmat2"


@dataclass(frozen=True)
class Shape:
    """The workgroup's tile of C (``bm``×``bn``), its K-step ``bk``, its invocations, the tile rows
    walked together (``group``) and the K-steps per loop iteration (``unroll``, printed only when
    not 1). Printed in the mode's text; ``parse`` reads it (VKML_MATMUL_COOPMAT2_SHAPE; words after the tile in any order).

    >>> Shape(), Shape.parse("128x256x64 t256 g8").threads, Shape.parse("128x128x64 t128 u2 g16").unroll
    (Shape(128x128x64 t128 g16), 256, 2)
    """

    bm: int = 128
    bn: int = 128
    bk: int = 64
    threads: int = 128
    group: int = 16
    unroll: int = 1

    def __post_init__(self):
        if min(self.bm, self.bn, self.bk, self.threads, self.group, self.unroll) < 1:
            raise ValueError(f"every size of a coopmat2 shape must be positive: {self}")

    def __str__(self) -> str:
        unroll = f" u{self.unroll}" if self.unroll != 1 else ""
        return f"{self.bm}x{self.bn}x{self.bk} t{self.threads}{unroll} g{self.group}"

    def __repr__(self) -> str:
        return f"Shape({self})"

    @classmethod
    def parse(cls, text: str) -> Shape:
        """The shape ``str`` wrote, e.g. ``128x128x64 t128 u2 g16``; fields left out keep their defaults."""
        tile, *words = text.split()
        fields = {"t": "threads", "g": "group", "u": "unroll"}
        try:
            bm, bn, bk = (int(v) for v in tile.split("x"))
            given = {fields[word[0]]: int(word[1:]) for word in words}
        except (KeyError, ValueError):
            raise ValueError(f"not a coopmat2 shape: {text!r} (e.g. '128x128x64 t128 u2 g16')") from None
        return cls(bm, bn, bk, **given)


DEFAULT = Shape()  # extra/proto_coopmat2.py's "128x128x64 t128 g16 f32", the best measured (docs/benchmarks.md)


# Where a tile of 128 would pass the edge of M or N, one of 64 that divides it (or covers a side of at most
# 64) takes its place: loads past an edge clamp, and clamped tiles ran a product with N = 64 (conv2d's)
# ten times slower than 128×64 tiles, which matched cuBLAS (docs/benchmarks.md, session 10, has the
# figures per shape); 128×64 and 64×64 tiles take 128 and 64 invocations.
HALF_SIDE = 64


def _side(size: int, full: int) -> int:
    """The tile side for a dimension of ``size``: ``full`` unless a half side avoids clamped loads."""
    if size % full == 0:
        return full
    return HALF_SIDE if size <= HALF_SIDE or size % HALF_SIDE == 0 else full


def chosen_shape(m: int | None = None, n: int | None = None) -> Shape:
    """The shape ``VKML_MATMUL_COOPMAT2_SHAPE`` names, else ``DEFAULT`` with each side of the tile halved
    where that spares the product clamped loads (``m`` × ``n``: the product's size; None: DEFAULT's side).

    >>> chosen_shape(4096, 4096), chosen_shape(200704, 64), chosen_shape(64, 64), chosen_shape(100, 100)
    (Shape(128x128x64 t128 g16), Shape(128x64x64 t128 g16), Shape(64x64x64 t64 g16), Shape(128x128x64 t128 g16))
    """
    text = vkml_config.matmul_coopmat2_shape()
    if text:
        return Shape.parse(text)
    bm = DEFAULT.bm if m is None else _side(m, DEFAULT.bm)
    bn = DEFAULT.bn if n is None else _side(n, DEFAULT.bn)
    if (bm, bn) == (DEFAULT.bm, DEFAULT.bn):
        return DEFAULT
    threads = DEFAULT.threads if max(bm, bn) > HALF_SIDE else HALF_SIDE
    return Shape(bm, bn, DEFAULT.bk, threads, DEFAULT.group)


def applies(features, a_dtype: T.DType, b_dtype: T.DType, shape: Shape = DEFAULT) -> bool:
    """Whether the device runs float16 × float16 products on workgroup-scope matrices of ``shape``.

    >>> applies(DeviceFeatures.h200_like(), float16, float16), applies(DeviceFeatures.lavapipe_like(), float16, float16)
    (True, False)
    """
    if features is None or a_dtype is not T.float16 or b_dtype is not T.float16 or not vkml_config.matmul_coopmat2():
        return False
    return (
        features.has_flexible_shape(shape.bm, shape.bn, shape.bk, shape.threads)
        and features.vulkan_memory_model
        and features.float16
        and features.storage_buffer_16bit
        and features.rte_float16  # the hardware narrowing must round to nearest even
        and tuple(features.spirv_version) >= (1, 6)
        and shape.threads <= features.max_workgroup_invocations
    )


def stored(operand: Node) -> Node:
    """The node whose buffer holds ``operand`` in row-major order: the source of a view that only
    reshapes a computed tensor (conv2d's 2-D im2col matrix), else ``operand`` itself."""
    if operand.realized or operand.op != Op.VIEW:
        return operand
    (source,) = operand.srcs
    views = operand.arg.views
    if len(views) == 1 and views[0].is_contiguous and source.numel == operand.numel and source.op != Op.VIEW:
        return source
    return operand


def fits(mm: Node, features) -> bool:
    """Whether product node ``mm`` is one this template computes: 2-D operands loaded as stored (no view
    but a reshape of a computed tensor, no cast or constant between them and a buffer), each buffer within
    one descriptor's range."""
    a, b = mm.srcs
    if len(a.shape) != 2 or len(b.shape) != 2 or 0 in (*a.shape, *b.shape):
        return False
    # A value cast or a constant is folded into the loads; a bit view (conv2d's float16 columns, copied as
    # int16) is computed into a buffer first (tiled.computed_operands), which this template then reads.
    folded = [s for s in map(stored, (a, b)) if not s.realized and s.op in (Op.VIEW, Op.CAST, Op.CONST)]
    if any(not (s.op == Op.CAST and s.arg.bits) for s in folded):
        return False
    largest = 2 * max(a.numel, b.numel, a.shape[0] * b.shape[1])
    return largest <= features.max_storage_buffer_range


@dataclass(frozen=True)
class Mode:
    """The scheduler's mode of a group this template lowers: it keys the template cache as it is.

    >>> str(Mode(32, DEFAULT))
    'matmul coopmat2 32 128x128x64 t128 g16'
    """

    subgroup_size: int
    shape: Shape

    def __str__(self) -> str:
        return f"{MODE} {self.subgroup_size} {self.shape}"


def mode(features, shape: Shape = DEFAULT) -> Mode:
    """The mode of a group on a device with ``features``: its subgroup size and the shape of the tiles."""
    return Mode(features.subgroup_size if features is not None else 32, shape)


def lowers(root: Node, mm: Node, leaves) -> bool:
    """Whether this template lowers the group: the product alone (no fused consumer), its operands loaded."""
    return root is mm and all(s.realized or id(s) in leaves for s in map(stored, mm.srcs))


def grouped_tile(w: Value, tiles: tuple[int, int], group: int) -> tuple[Value, Value]:
    """Workgroup ``w``'s (tile row, tile column): ``group`` tile rows at a time, down each column of the
    group before the next column (extra/proto_coopmat2.tile_of computes the same in Python)."""
    tiles_m, tiles_n = tiles
    per_group = group * tiles_n
    first = (w / _u32(per_group)) * _u32(group)
    left = _u32(tiles_m) - first
    rows = B.select(left < _u32(group), left, _u32(group))  # the last group may have fewer rows
    local = w % _u32(per_group)
    return first + local % rows, local / rows


def lower_matmul_coopmat2(root: Node, mm: Node, leaves, baked, subgroup_size: int, shape: Shape) -> GroupTemplate:
    """One kernel computing the float16 product ``mm`` (= ``root``) on workgroup-scope matrices."""
    a, b = mm.srcs
    (m_size, k_size), n_size = a.shape, b.shape[1]
    bm, bn, bk = shape.bm, shape.bn, shape.bk
    tiles = (-(-m_size // bm), -(-n_size // bn))
    total = math.prod(tiles)
    grid = fold_grid(total)
    L = Lowering(kernel_name(root, "MMW"), (shape.threads, 1, 1), leaves, baked)
    L.kb.subgroup_size = subgroup_size  # the matrix instructions' verifier and codegen check it
    a_ref, b_ref = L.leaf(stored(a)), L.leaf(stored(b))  # dims are the operands': a reshape keeps the order
    out_ref = L.bind_buffer(root.dtype, "write", "out", BufferRole(BufferKind.OUT, root))
    # "inside" where whole tiles cover a tensor: no clamping to pay for (the prototype's 8192³ kernel).
    a_edge = "inside" if m_size % bm == 0 and k_size % bk == 0 else "clamp"
    b_edge = "inside" if k_size % bk == 0 and n_size % bn == 0 else "clamp"
    c_edge = "inside" if m_size % bm == 0 and n_size % bn == 0 else "clamp"
    a_type = T.matrix_type(T.float16, bm, bk, "a", "workgroup")
    b_type = T.matrix_type(T.float16, bk, bn, "b", "workgroup")
    acc_type = T.matrix_type(T.float32, bm, bn, "acc", "workgroup")
    with L.kb:
        wg = linear_workgroup(grid)
        # A folded grid may have spare workgroups; the test is uniform per workgroup.
        with _maybe_if(wg < _u32(total) if grid[0] * grid[1] > total else None):
            tile_row, tile_col = grouped_tile(wg, tiles, shape.group)
            row0, col0 = tile_row * _u32(bm), tile_col * _u32(bn)

            def step(k: Value, acc: Value) -> Value:
                a_block = a_ref.load_matrix((row0, k), a_type, (m_size, k_size), a_edge)
                b_block = b_ref.load_matrix((k, col0), b_type, (k_size, n_size), b_edge)
                return B.matrix_mul_add(a_block, b_block, acc)

            def iteration(k: Value, acc: Value, unroll: int = shape.unroll) -> tuple[Value]:
                for i in range(unroll):  # k ascends within the iteration
                    acc = step(k if i == 0 else k + _u32(i * bk), acc)
                return (acc,)

            acc = B.matrix_fill(B.const_bits(0x80000000, T.float32), acc_type)  # -0.0: the contract's start
            k_step = bk * shape.unroll
            unrolled = k_size // k_step * k_step if shape.unroll > 1 else 0
            if unrolled:
                (acc,) = B.loop(_u32(0), _u32(unrolled), _u32(k_step), (acc,), iteration)
            if unrolled < k_size or not unrolled:
                # The K-steps left (all of them where unroll is 1), one per iteration: one more site of
                # loads rather than up to unroll - 1, each of which may take its own staging memory.
                single = lambda k, acc: iteration(k, acc, 1)  # noqa: E731
                (acc,) = B.loop(_u32(unrolled), _u32(max(k_size, 1)), _u32(bk), (acc,), single)
            out_ref.store_matrix((row0, col0), acc, (m_size, n_size), c_edge)
    return GroupTemplate([L.template(grid)])
