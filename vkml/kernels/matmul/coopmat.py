"""The cooperative-matrix matmul template: float16 operands, float32 accumulation on matrix units.

Chosen (``applies``) for a product of two float16 operands on a device that lists the
16×16×16 float16 × float16 → float32 subgroup shape of VK_KHR_cooperative_matrix, with the
Vulkan memory model and enough shared memory; everywhere else kernels_matmul's scalar
tiles run (lavapipe has no cooperative matrices). ``VKML_MATMUL_COOPMAT=0`` turns it off.
Operands that are float16 widened to float32 where they are read (``lowering.widened_from``: half
``linear`` with a bias, ``addmm``, ``baddbmm``) count as float16: their sources are staged as stored
and the float32 product keeps its sums (``store_output`` narrows by the product's dtype).

The shape (``Shape``, part of the mode; ``DEFAULT`` unless a sweep swaps it) is the
one measured fastest in hand-written SPIR-V (reference/vulkan.md): 8 subgroups own a 128×128 tile of C; per K-step of 32 they stage a 128×32 tile of A
(row-major, rows padded to 40 halves) and a 32×128 tile of B (row-major, rows padded to 136)
in shared memory, double-buffered as in the scalar template (45 KiB with the epilogue's
blocks; an operand whose contiguous axis is the other one — B in ``x @ w.T`` — is staged
with its rows along that axis, 128 × 40 halves, and read as column-major matrices: 48 KiB at
most); subgroup s owns the 64×32 block at rows 64·(s // 4), columns 32·(s % 4): 4 × 2
accumulators of 16×16, and each K-step is two 16-deep sub-steps of 4 A loads, 2 B loads and 8
multiply-adds. Staging loads walk each operand's contiguous axis and load float16 as stored;
aligned groups of four along an operand's innermost dim are one 8-byte global load and one
8-byte shared store (``shared_vstore``: the tile is then an array of 4-vectors on the device,
and its matrix loads count their stride in vectors); the other operands whose contiguous
axis holds whole groups of four gather four element loads into one such store.
bench/bench_matmul_coopmat.py --sweep
times the other ``CANDIDATES`` (larger tiles, 64×64 subgroup blocks, K-steps of 16).

Tails: staging pads positions past M, N or K with A = -0.0 and B = +0.0, so every padded
product is -0.0, which leaves each sum unchanged (as the scalar template's padding does).

Epilogue: for each accumulator in turn, every subgroup stores its 16×16 float32 block into
its own 1 KiB of shared memory; after a barrier the workgroup's invocations read those
values, 8 each, and compute the root there exactly as the scalar template does (the software
float32 → float16 narrowing, then fused consumers: bias, activation). That is two workgroup
barriers per accumulator; a shape with ``epilogue=2`` (``e2``) alternates two blocks a subgroup
and needs one. Either way each output is the same float32 sum, narrowed the same way.

Accumulation (docs/ops/matmul.md): each output starts from -0.0 and takes the 16-deep
blocks of k in ascending order. The CPU interpreter adds each exact product in ascending k
(``cm_mul_add``), so there this kernel gives the scalar template's bits; a device sums the
products of a block in its own order and precision, within the bound the op's page states,
the same bits on every run (fixed tiles, fixed order of the blocks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ... import config as vkml_config
from ...graph.node import Node
from ...ir import builder as B
from ...ir import types as T
from ...ir.core import Value
from ...ir.instructions import VECTOR_WIDTH
from ..lowering import (
    BufferKind,
    BufferRole,
    GroupTemplate,
    Index,
    Lowering,
    _u32,
    fold_grid,
    kernel_name,
    linear_workgroup,
)
from .tiled import _clamp, _contiguous_along_k, _maybe_if, _plus, store_output, tile_of

MODE = "matmul coopmat"
MATRIX = 16  # the 16×16×16 shape
PAD = 8  # halves added to each shared row: a subgroup's matrix loads of 8 rows hit distinct banks
A_MATRIX = T.matrix_type(T.float16, MATRIX, MATRIX, "a")
B_MATRIX = T.matrix_type(T.float16, MATRIX, MATRIX, "b")
ACC_MATRIX = T.matrix_type(T.float32, MATRIX, MATRIX, "acc")


@dataclass(frozen=True)
class Shape:
    """The template's shape: the workgroup's tile of C (``bm``×``bn``), its K-step ``bk``, each
    subgroup's block of C (``sub_m``×``sub_n``: the subgroups tile the workgroup's tile), and
    ``vector``: 4 stages aligned groups of four float16 with one 8-byte shared store
    (``shared_vstore``), 1 element by element; ``epilogue``: the epilogue's blocks of shared
    memory per subgroup, 1 (store, barrier, read, barrier: two workgroup barriers per
    accumulator) or 2 (accumulators alternate between two blocks: one barrier each, for 1 KiB
    more per subgroup). Printed in the mode's text (``e2``; 1 is not printed); ``parse`` reads that text.

    >>> Shape(), Shape.parse("256x128x16 sg64x64 v4").subgroups, Shape.parse("128x128x16 sg64x32 v4 e2").epilogue
    (Shape(128x128x32 sg64x32 v4), 8, 2)
    """

    bm: int = 128
    bn: int = 128
    bk: int = 32
    sub_m: int = 64
    sub_n: int = 32
    vector: int = 4
    epilogue: int = 1

    def __str__(self) -> str:
        text = f"{self.bm}x{self.bn}x{self.bk} sg{self.sub_m}x{self.sub_n} v{self.vector}"
        return text if self.epilogue == 1 else f"{text} e{self.epilogue}"

    def __repr__(self) -> str:
        return f"Shape({self})"

    @classmethod
    def parse(cls, text: str) -> Shape:
        tile, sub, vector, *epilogue = text.split()
        bm, bn, bk = (int(v) for v in tile.split("x"))
        sub_m, sub_n = (int(v) for v in sub.removeprefix("sg").split("x"))
        blocks = int(epilogue[0].removeprefix("e")) if epilogue else 1
        return cls(bm, bn, bk, sub_m, sub_n, int(vector.removeprefix("v")), blocks)

    @property
    def subgroups(self) -> int:
        return (self.bm // self.sub_m) * (self.bn // self.sub_n)

    def tile_halves(self, outer: int) -> int:
        """Halves of one buffer of an operand's tile, whichever way its rows run (see _Staging)."""
        return max(outer * (self.bk + PAD), self.bk * (outer + PAD))

    def shared_bytes(self) -> int:
        """Double-buffered A and B tiles (float16) and ``epilogue`` float32 16×16 blocks per subgroup."""
        staging = 2 * 2 * (self.tile_halves(self.bm) + self.tile_halves(self.bn))
        return staging + 4 * self.epilogue * self.subgroups * MATRIX * MATRIX

    def problem(self, subgroup_size: int) -> str | None:
        """Why this shape cannot be lowered for ``subgroup_size``-wide subgroups (None: it can)."""
        threads = self.subgroups * subgroup_size
        if self.vector not in (1, VECTOR_WIDTH):
            return f"vector must be 1 or {VECTOR_WIDTH}"
        if self.epilogue not in (1, 2):
            return "epilogue must be 1 or 2 blocks"
        if any(v % MATRIX for v in (self.bk, self.sub_m, self.sub_n)):
            return f"bk and the subgroup block must be multiples of {MATRIX}"
        if self.bm % self.sub_m or self.bn % self.sub_n:
            return "the subgroup blocks must tile the workgroup's tile"
        # Every invocation stages whole units of VECTOR_WIDTH in every round (also when vector is 1:
        # an operand loads groups of four wherever it can).
        if any((outer * self.bk) % (threads * VECTOR_WIDTH) for outer in (self.bm, self.bn)):
            return f"a tile of A or B is not a whole number of rounds of {threads} × {VECTOR_WIDTH}"
        if MATRIX * MATRIX % subgroup_size:
            return "the epilogue reads a 16×16 block in whole rounds of a subgroup"
        return None


# The shape lowered on a device: the reference's fastest (reference/vulkan.md) with vector staging
# stores; bench/bench_matmul_coopmat.py --sweep times it against the other candidates.
DEFAULT = Shape()

# The shapes the sweep times (each fits 48 KiB of shared memory with 32-wide subgroups).
CANDIDATES = (
    DEFAULT,
    Shape(vector=1),  # element-wise staging stores: what the vector stores gain
    Shape(128, 128, 16, 64, 32),  # K-steps of 16: half the shared memory, twice the barriers
    Shape(128, 128, 32, 32, 64),  # 8 subgroups of 32×64
    Shape(128, 128, 32, 64, 64),  # 4 subgroups of 64×64 (the reference: 188 vs 224 TFLOP/s)
    Shape(256, 128, 16, 64, 64),  # 8 subgroups of 64×64: half the shared traffic per product
    Shape(128, 256, 16, 64, 64),
    Shape(256, 128, 16, 128, 32),  # 8 subgroups of 128×32
    # One workgroup barrier per accumulator in the epilogue instead of two (2 blocks a subgroup):
    Shape(128, 128, 32, 64, 64, epilogue=2),  # 48 KiB
    Shape(128, 128, 16, 64, 32, epilogue=2),  # 40 KiB
    # Smaller footprints (shared memory and accumulators a thread): more workgroups resident per SM.
    Shape(64, 128, 32, 32, 32),  # 38 KiB, 4 accumulators a subgroup
    Shape(64, 128, 32, 32, 32, epilogue=2),  # 46 KiB
    Shape(64, 64, 64, 32, 32),  # K-steps of 64 in 40 KiB, 128 invocations
)


# For a product with a side of at most 64 (conv2d's products: 64 output channels): DEFAULT's 128×128
# tiles leave half of each tile past the edge; these took about half the time on such a product
# (docs/benchmarks.md, session 10: .scratch-style probe of 200704×576 @ 576×64 per shape).
SMALL_SIDE = Shape(64, 64, 64, 32, 32)


def shape_for(m: int, n: int) -> Shape:
    """The tiles for an ``m`` × ``n`` product: ``SMALL_SIDE`` where a side is at most 64, else ``DEFAULT``.

    >>> shape_for(4096, 4096) == DEFAULT, shape_for(200704, 64) == SMALL_SIDE
    (True, True)
    """
    return SMALL_SIDE if min(m, n) <= SMALL_SIDE.bm else DEFAULT


def shared_bytes(shape: Shape | None = None) -> int:
    """The shared memory ``shape`` (default: DEFAULT) needs, in bytes."""
    return (shape or DEFAULT).shared_bytes()


def fits(features, shape: Shape) -> bool:
    """Whether ``shape`` lowers for the device and fits its workgroup and shared-memory limits."""
    return (
        shape.problem(features.subgroup_size) is None
        and shape.subgroups * features.subgroup_size <= features.max_workgroup_invocations
        and shape.shared_bytes() <= features.max_compute_shared_memory_size
    )


def applies(features, a_dtype: T.DType, b_dtype: T.DType) -> bool:
    """Whether a product of ``a_dtype`` and ``b_dtype`` operands runs on cooperative matrices on this device.

    >>> applies(DeviceFeatures.h200_like(), float16, float16), applies(DeviceFeatures.lavapipe_like(), float16, float16)
    (True, False)
    """
    if features is None or a_dtype is not T.float16 or b_dtype is not T.float16 or not vkml_config.matmul_coopmat():
        return False
    return (
        features.has_matrix_shape(MATRIX, MATRIX, MATRIX)
        and features.vulkan_memory_model
        and features.float16
        and features.storage_buffer_16bit
        and tuple(features.spirv_version) >= (1, 6)
        and fits(features, DEFAULT)
    )


@dataclass(frozen=True)
class Mode:
    """The scheduler's mode of a group this template lowers: it keys the template cache as it is.

    >>> str(Mode(32, DEFAULT))
    'matmul coopmat 32 128x128x32 sg64x32 v4'
    """

    subgroup_size: int
    shape: Shape

    def __str__(self) -> str:
        return f"{MODE} {self.subgroup_size} {self.shape}"


def mode(features, shape: Shape | None = None) -> Mode:
    """The mode of a group on a device with ``features``: its subgroup size and the shape of the tiles."""
    return Mode(features.subgroup_size if features is not None else 32, shape or DEFAULT)


@dataclass
class _Staging:
    """How the invocations copy one operand's tile into shared memory (float16, rows padded), one K-step at a time.

    The tile's shared rows run along the operand's contiguous axis: one row per m of A (or n
    of B) holding bk values of k (``row`` = bk + PAD halves) where k is contiguous, else one row
    per k holding bm (bn) values. Matrix loads then read A row-major or column-major (B
    column-major or row-major): ``layout``. The invocations take units of ``width`` elements
    along that axis (unit u = tid + round·threads). Aligned groups of 4 are loaded as one vector
    where that axis is the operand's innermost and a float16 buffer's (``Lowering.f16_groups``);
    with ``Shape.vector`` 4 the other operands whose contiguous axis holds whole groups
    (``x @ w.T``: B along k) gather 4 elements per unit, so that every unit goes to shared memory
    as one vector store (``shared_vstore``): a unit's 4 elements are neighbours in a row that
    starts on a whole vector (rows are multiples of 4 halves).
    """

    operand: Node
    is_a: bool
    along_k: bool  # the operand's contiguous axis is k: shared rows run along k
    width: int
    vector_load: bool
    vector_store: bool
    row: int  # halves per shared row
    size: int  # halves per buffer of the tile
    slots: list  # per round: (kk, clamped outer index, inside or None, shared address) of the unit's first element

    @classmethod
    def plan(cls, L: Lowering, shape: Shape, operand: Node, is_a: bool, threads: int, tid: Value, origin, extent):
        outer, bk = (shape.bm if is_a else shape.bn), shape.bk
        along_k = _contiguous_along_k(operand, is_a)
        row = (bk if along_k else outer) + PAD
        innermost = along_k == is_a  # A's innermost dim is k, B's is n
        k_size = operand.shape[-1] if is_a else operand.shape[-2]
        vector_load = innermost and operand.shape[-1] % VECTOR_WIDTH == 0 and L.f16_groups(operand)
        # Gathered units need whole groups along the contiguous axis (so that a unit is wholly inside or out).
        gather = shape.vector == VECTOR_WIDTH and (k_size if along_k else extent) % VECTOR_WIDTH == 0
        width = VECTOR_WIDTH if vector_load or gather else 1
        vector_store = width == VECTOR_WIDTH == shape.vector
        slots = []
        for r in range(outer * bk // (threads * width)):
            u = _plus(tid, r * threads)
            if along_k:
                o, kk = u / _u32(bk // width), u % _u32(bk // width)
            else:
                o, kk = u % _u32(outer // width), u / _u32(outer // width)
            if vector_store:  # the address counts vectors: rows hold row // 4 of them
                address = o * _u32(row // width) + kk if along_k else kk * _u32(row // width) + o
            if width > 1:  # the unit's first element: units run along the contiguous axis
                o, kk = (o, kk * _u32(width)) if along_k else (o * _u32(width), kk)
            if not vector_store:
                address = o * _u32(row) + kk if along_k else kk * _u32(row) + o
            index, inside = _clamp(origin + o, extent, extent % outer == 0)
            slots.append((kk, index, inside, address))
        size = row * (outer if along_k else bk)
        return cls(operand, is_a, along_k, width, vector_load, vector_store, row, size, slots)

    @property
    def layout(self) -> str:
        """How a 16×16 matrix of the operand lies in the tile: A's rows are m, B's rows are k."""
        return "row" if self.along_k == self.is_a else "col"

    def at(self, o: int, k: int) -> int:
        """The tile's element for outer offset ``o`` and k offset ``k`` (halves, from a buffer's start)."""
        return o * self.row + k if self.along_k else k * self.row + o

    def fetch(self, L: Lowering, batch_multi: tuple, k0: Value, k_size: int, bk: int) -> list[list[Value]]:
        """This invocation's float16 elements of the tile at ``k0``, per unit: past the operand, -0.0 (A) or +0.0 (B)."""
        fill = B.const_bits(0x8000 if self.is_a else 0, T.float16)
        shape = self.operand.shape
        units = []
        for kk, index, inside, _ in self.slots:
            k, k_inside = _clamp(k0 + kk, k_size, k_size % bk == 0)

            if self.vector_load:  # the unit is an aligned group along the innermost dim
                first = self.multi(batch_multi, index, k, 0)
                grouped = (*shape[:-1], shape[-1] // self.width)
                group_multi = (*first[:-1], first[-1] / _u32(self.width))
                values = L.f16_group_values(self.operand, Index(grouped, multi=group_multi).lin, group_multi)
            else:
                # A unit runs along the operand's innermost dim (A along k, B along n) from a multiple of its
                # width: its elements share every other digit of a view that merges that dim (Index.lane).
                base = self.multi(batch_multi, index, k, 0)[-1]
                along_last = self.along_k == self.is_a and self.width > 1
                values = []
                for c in range(self.width):
                    lane = (base, c, self.width) if along_last else None
                    index_c = Index(shape, multi=self.multi(batch_multi, index, k, c), lane=lane)
                    values.append(L.value_f16(self.operand, index_c))
            ok = inside if k_inside is None else (k_inside if inside is None else inside & k_inside)
            units.append([B.select(ok, v, fill) if ok is not None else v for v in values])
        return units

    def multi(self, batch_multi: tuple, index: Value, k: Value, c: int) -> tuple:
        """The multi-index of a unit's element ``c`` (a clamped unit starts at 0, so c stays inside)."""
        o_c, k_c = (index, _plus(k, c)) if self.along_k else (_plus(index, c), k)
        return (*batch_multi, o_c, k_c) if self.is_a else (*batch_multi, k_c, o_c)

    def store(self, tile: B.SharedRef, buffer: Value | None, units: list[list[Value]]) -> None:
        """The units into buffer ``buffer`` (0 or 1; None: 0) of the tile."""
        per_buffer = self.size // VECTOR_WIDTH if self.vector_store else self.size
        base = None if buffer is None else buffer * _u32(per_buffer)
        for (_, _, _, address), values in zip(self.slots, units):
            at = address if base is None else base + address
            if self.vector_store:
                tile.store4(at, values)
            else:
                for c, v in enumerate(values):  # a unit's elements are neighbours in its shared row
                    tile[_plus(at, c)] = v


def lower_matmul_coopmat(
    root: Node, mm: Node, leaves, baked, subgroup_size: int | None = None, shape: Shape | None = None
) -> GroupTemplate:
    """One kernel computing the float16 product ``mm`` on cooperative matrices and ``root`` at its store.

    ``subgroup_size``: the device's (None: read from ``root``'s device, 32 without one);
    ``shape``: the template's shape (None: DEFAULT).
    """
    if subgroup_size is None:
        features = getattr(root.device, "features", None)
        subgroup_size = features.subgroup_size if features is not None else 32
    shape = shape or DEFAULT
    problem = shape.problem(subgroup_size)
    if problem is not None:
        raise ValueError(f"cooperative-matrix shape {shape}: {problem}")
    bm, bn, bk = shape.bm, shape.bn, shape.bk
    a, b = mm.srcs
    *batch, m_size, k_size = a.shape
    n_size = b.shape[-1]
    threads = shape.subgroups * subgroup_size
    tiles_m, tiles_n = -(-m_size // bm), -(-n_size // bn)
    total = math.prod(batch) * tiles_m * tiles_n
    grid = fold_grid(total)
    k_steps = max(1, -(-k_size // bk))
    L = Lowering(kernel_name(root, "MMC"), (threads, 1, 1), leaves, baked)
    L.kb.subgroup_size = subgroup_size
    out_ref = L.bind_buffer(root.dtype, "write", "out", BufferRole(BufferKind.OUT, root))
    c_block = L.kb.shared("c_block", T.float32, shape.epilogue * shape.subgroups * MATRIX * MATRIX)
    with L.kb:
        wg = linear_workgroup(grid)
        # A folded grid may have spare workgroups; the test is uniform per workgroup.
        with _maybe_if(wg < _u32(total) if grid[0] * grid[1] > total else None):
            batch_index, batch_multi, row0, col0 = tile_of(wg, (tiles_m, tiles_n), batch, (bm, bn))
            tid = B.local_id(0)
            stagings = (
                _Staging.plan(L, shape, a, True, threads, tid, row0, m_size),
                _Staging.plan(L, shape, b, False, threads, tid, col0, n_size),
            )
            a_st, b_st = stagings
            tiles = (L.kb.shared("a_tile", T.float16, 2 * a_st.size), L.kb.shared("b_tile", T.float16, 2 * b_st.size))
            a_tile, b_tile = tiles
            for staging, tile in zip(stagings, tiles):
                staging.store(tile, None, staging.fetch(L, batch_multi, _u32(0), k_size, bk))
            B.barrier()
            sg = B.subgroup_id()
            across = bn // shape.sub_n  # subgroups along n
            a_first = (sg / _u32(across)) * _u32(a_st.at(shape.sub_m, 0))  # where the subgroup's block starts
            b_first = (sg % _u32(across)) * _u32(b_st.at(shape.sub_n, 0))

            def step(s: Value, *acc: Value) -> tuple[Value, ...]:
                after = s + 1
                k_next = B.select(after < _u32(k_steps), after, _u32(k_steps - 1)) * _u32(bk)
                fetched = [st.fetch(L, batch_multi, k_next, k_size, bk) for st in stagings]  # in flight meanwhile
                this = s & 1
                a_base = this * _u32(a_st.size) + a_first
                b_base = this * _u32(b_st.size) + b_first
                acc = list(acc)
                for sub in range(bk // MATRIX):  # k ascends: the blocks in the order of the contract
                    a_m = [
                        a_tile.load_matrix(
                            _plus(a_base, a_st.at(MATRIX * i, MATRIX * sub)), A_MATRIX, a_st.row, a_st.layout
                        )
                        for i in range(shape.sub_m // MATRIX)
                    ]
                    b_m = [
                        b_tile.load_matrix(
                            _plus(b_base, b_st.at(MATRIX * j, MATRIX * sub)), B_MATRIX, b_st.row, b_st.layout
                        )
                        for j in range(shape.sub_n // MATRIX)
                    ]
                    for i, a_i in enumerate(a_m):
                        for j, b_j in enumerate(b_m):
                            t = i * len(b_m) + j
                            acc[t] = B.matrix_mul_add(a_i, b_j, acc[t])
                other = this ^ 1
                for staging, tile, values in zip(stagings, tiles, fetched):
                    staging.store(tile, other, values)
                B.barrier()  # one per step: the buffer written here was last read before the previous one
                return tuple(acc)

            count = (shape.sub_m // MATRIX) * (shape.sub_n // MATRIX)
            start = B.matrix_fill(B.const_bits(0x80000000, T.float32), ACC_MATRIX)
            acc = B.loop(_u32(0), _u32(k_steps), _u32(1), (start,) * count, step)
            origin = (batch_index, batch_multi), (row0, col0), (m_size, n_size)
            _epilogue(L, shape, root, mm, out_ref, acc, c_block, (sg, tid, subgroup_size), origin)
    return GroupTemplate([L.template(grid)])


def _epilogue(L, shape: Shape, root, mm, out_ref, acc, c_block, who, origin) -> None:
    """Each accumulator through shared memory: subgroup q's block is read by invocations q·S ... q·S + S - 1.

    With two blocks a subgroup, accumulator t goes to block t % 2: the store of t + 2 comes after
    the barrier of t + 1, which every invocation reaches only once it has read t, so one barrier
    per accumulator keeps the reads ahead of the overwrite."""
    sg, tid, subgroup_size = who
    batch, (row0, col0), (m_size, n_size) = origin
    block = MATRIX * MATRIX
    across = shape.bn // shape.sub_n
    q = tid / _u32(subgroup_size)  # whose block this invocation reads (any invocation may: a barrier is between)
    lane = tid % _u32(subgroup_size)
    q_row = row0 + (q / _u32(across)) * _u32(shape.sub_m)
    q_col = col0 + (q % _u32(across)) * _u32(shape.sub_n)
    per_row = shape.sub_n // MATRIX
    for t, matrix in enumerate(acc):
        i, j = divmod(t, per_row)
        half = (t % shape.epilogue) * shape.subgroups * block  # where this accumulator's blocks start
        c_block.store_matrix(_plus(sg * _u32(block), half), matrix, MATRIX)
        B.barrier()
        for r in range(block // subgroup_size):
            e = _plus(lane, r * subgroup_size)
            value = c_block[_plus(q * _u32(block), half) + e]
            row = _plus(q_row, MATRIX * i) + e / _u32(MATRIX)
            col = _plus(q_col, MATRIX * j) + e % _u32(MATRIX)
            row_ok = None if m_size % shape.bm == 0 else row < _u32(m_size)
            col_ok = None if n_size % shape.bn == 0 else col < _u32(n_size)
            inside = row_ok if col_ok is None else (col_ok if row_ok is None else row_ok & col_ok)
            store_output(L, root, mm, out_ref, value, batch, (row, col), inside)
        if shape.epilogue == 1:
            B.barrier()  # the block is overwritten by the next accumulator
