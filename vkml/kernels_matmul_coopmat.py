"""The cooperative-matrix matmul template: float16 operands, float32 accumulation on matrix units.

Chosen (``applies``) for a product of two float16 operands on a device that lists the
16×16×16 float16 × float16 → float32 subgroup shape of VK_KHR_cooperative_matrix, with the
Vulkan memory model and enough shared memory; everywhere else kernels_matmul's scalar
tiles run (lavapipe has no cooperative matrices). ``VKML_MATMUL_COOPMAT=0`` turns it off.

The shape is the one measured fastest on the H200 (reference/vulkan.md, 224 TFLOP/s at
8192³ in hand-written SPIR-V): 8 subgroups own a 128×128 tile of C; per K-step of 32 they
stage a 128×32 tile of A (row-major, rows padded to 40 halves) and a 32×128 tile of B
(row-major, rows padded to 136) in shared memory, double-buffered as in the scalar template
(37 KiB); subgroup s owns the 64×32 block at rows 64·(s // 4), columns 32·(s % 4): 4 × 2
accumulators of 16×16, and each K-step is two 16-deep sub-steps of 4 A loads, 2 B loads and 8
multiply-adds. Staging loads walk each operand's contiguous axis, and load float16 as stored.

Tails: staging pads positions past M, N or K with A = -0.0 and B = +0.0, so every padded
product is -0.0, which leaves each sum unchanged (as the scalar template's padding does).

Epilogue: for each accumulator in turn, every subgroup stores its 16×16 float32 block into
its own 1 KiB of shared memory; after a barrier the workgroup's invocations read those
values, 8 each, and compute the root there exactly as the scalar template does (the software
float32 → float16 narrowing, then fused consumers: bias, activation).

Accumulation (docs/ops/matmul.md): each output starts from -0.0 and takes the 16-deep
blocks of k in ascending order. The CPU interpreter adds each exact product in ascending k
(``cm_mul_add``), so there this kernel gives the scalar template's bits; a device sums the
products of a block in its own order and precision, within the bound the op's page states,
the same bits on every run (fixed tiles, fixed order of the blocks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import config as vkml_config
from .graph import Node
from .ir import builder as B
from .ir import types as T
from .ir.core import Value
from .ir.instructions import VECTOR_WIDTH
from .kernels import GroupTemplate, Index, Lowering, _u32, fold_grid, kernel_name, linear_workgroup, unravel
from .kernels_matmul import _clamp, _contiguous_along_k, _maybe_if, _plus, store_output

MODE = "matmul coopmat"
SUBGROUPS = 8  # per workgroup, 2 × 4 over the tile
BM = BN = 128
BK = 32
SUB_M, SUB_N = 64, 32  # one subgroup's block of C
MATRIX = 16  # the 16×16×16 shape
A_ROW, B_ROW = BK + 8, BN + 8  # padded shared rows (halves): a subgroup's matrix loads hit distinct banks
A_MATRIX = T.matrix_type(T.float16, MATRIX, MATRIX, "a")
B_MATRIX = T.matrix_type(T.float16, MATRIX, MATRIX, "b")
ACC_MATRIX = T.matrix_type(T.float32, MATRIX, MATRIX, "acc")


def shared_bytes(subgroups: int = SUBGROUPS) -> int:
    """Double-buffered A and B tiles (float16) and one float32 16×16 block per subgroup for the epilogue."""
    return 2 * 2 * (BM * A_ROW + BK * B_ROW) + 4 * subgroups * MATRIX * MATRIX


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
        and SUBGROUPS * features.subgroup_size <= features.max_workgroup_invocations
        and shared_bytes() <= features.max_compute_shared_memory_size
    )


def mode(features) -> str:
    """The scheduler's mode string: it keys the template cache, so it names the subgroup size the kernel is for.

    >>> mode(DeviceFeatures.h200_like())
    'matmul coopmat 32'
    """
    return f"{MODE} {features.subgroup_size if features is not None else 32}"


@dataclass
class _Staging:
    """How the invocations copy one operand's tile into shared memory (float16, rows padded), one K-step at a time.

    A's tile is 128 rows of 32 k (row r at r·A_ROW); B's is 32 rows of k, 128 columns each (row
    kk at kk·B_ROW). The invocations take units of ``width`` elements along the operand's
    contiguous axis (unit u = tid + round·threads): aligned groups of 4 loaded as one vector
    where that axis is the operand's innermost and a float16 buffer's (``Lowering.f16_groups``),
    else single elements.
    """

    operand: Node
    is_a: bool
    width: int
    slots: list  # per round: (kk, clamped outer index, inside or None, shared address) of the unit's first element

    @classmethod
    def plan(cls, L: Lowering, operand: Node, is_a: bool, threads: int, tid: Value, origin: Value, extent: int):
        outer = BM if is_a else BN
        along_k = _contiguous_along_k(operand, is_a)
        innermost = along_k == is_a  # A's innermost dim is k, B's is n
        vector = innermost and operand.shape[-1] % VECTOR_WIDTH == 0 and L.f16_groups(operand)
        width = VECTOR_WIDTH if vector else 1
        slots = []
        for r in range(outer * BK // (threads * width)):
            u = _plus(tid, r * threads)
            if along_k:
                o, kk = u / _u32(BK // width), u % _u32(BK // width)
            else:
                o, kk = u % _u32(outer // width), u / _u32(outer // width)
            if width > 1:  # the unit's first element: units run along the contiguous axis
                o, kk = (o, kk * _u32(width)) if along_k else (o * _u32(width), kk)
            index, inside = _clamp(origin + o, extent, extent % outer == 0)
            address = o * _u32(A_ROW) + kk if is_a else kk * _u32(B_ROW) + o
            slots.append((kk, index, inside, address))
        return cls(operand, is_a, width, slots)

    def fetch(self, L: Lowering, batch_multi: tuple, k0: Value, k_size: int) -> list[list[Value]]:
        """This invocation's float16 elements of the tile at ``k0``, per unit: past the operand, -0.0 (A) or +0.0 (B)."""
        fill = B.const_bits(0x8000 if self.is_a else 0, T.float16)
        shape = self.operand.shape
        units = []
        for kk, index, inside, _ in self.slots:
            k, k_inside = _clamp(k0 + kk, k_size, k_size % BK == 0)
            multi = (*batch_multi, index, k) if self.is_a else (*batch_multi, k, index)
            if self.width == 1:
                values = [L.value_f16(self.operand, Index(shape, multi=multi))]
            else:  # the unit is an aligned group along the innermost dim
                grouped = (*shape[:-1], shape[-1] // self.width)
                group_multi = (*multi[:-1], multi[-1] / _u32(self.width))
                values = L.f16_group_values(self.operand, Index(grouped, multi=group_multi).lin, group_multi)
            ok = inside if k_inside is None else (k_inside if inside is None else inside & k_inside)
            units.append([B.select(ok, v, fill) if ok is not None else v for v in values])
        return units

    def store(self, tile: B.SharedRef, base: Value | None, units: list[list[Value]]) -> None:
        for (_, _, _, address), values in zip(self.slots, units):
            at = address if base is None else base + address
            for c, v in enumerate(values):  # a unit's elements are neighbours in its shared row
                tile[_plus(at, c)] = v


def lower_matmul_coopmat(root: Node, mm: Node, leaves, baked, subgroup_size: int | None = None) -> GroupTemplate:
    """One kernel computing the float16 product ``mm`` on cooperative matrices and ``root`` at its store.

    ``subgroup_size``: the device's (None: read from ``root``'s device, 32 without one).
    """
    if subgroup_size is None:
        features = getattr(root.device, "features", None)
        subgroup_size = features.subgroup_size if features is not None else 32
    a, b = mm.srcs
    *batch, m_size, k_size = a.shape
    n_size = b.shape[-1]
    threads = SUBGROUPS * subgroup_size
    tiles_m, tiles_n = -(-m_size // BM), -(-n_size // BN)
    batches = math.prod(batch)
    total = batches * tiles_m * tiles_n
    grid = fold_grid(total)
    k_steps = max(1, -(-k_size // BK))
    L = Lowering(kernel_name(root, "MMC"), (threads, 1, 1), leaves, baked)
    L.kb.subgroup_size = subgroup_size
    out_ref = L.bind_buffer(root.dtype, "write", "out", ("out", root))
    a_tile = L.kb.shared("a_tile", T.float16, 2 * BM * A_ROW)
    b_tile = L.kb.shared("b_tile", T.float16, 2 * BK * B_ROW)
    c_block = L.kb.shared("c_block", T.float32, SUBGROUPS * MATRIX * MATRIX)
    with L.kb:
        wg = linear_workgroup(grid)
        # A folded grid may have spare workgroups; the test is uniform per workgroup.
        with _maybe_if(wg < _u32(total) if grid[0] * grid[1] > total else None):
            tile_n = wg % _u32(tiles_n) if tiles_n > 1 else _u32(0)
            rest = wg / _u32(tiles_n) if tiles_n > 1 else wg
            tile_m = rest % _u32(tiles_m) if tiles_m > 1 else _u32(0)
            batch_index = (rest / _u32(tiles_m) if tiles_m > 1 else rest) if batches > 1 else _u32(0)
            batch_multi = unravel(batch_index, tuple(batch)) if batch else ()
            row0, col0 = tile_m * _u32(BM), tile_n * _u32(BN)
            tid = B.local_id(0)
            stagings = (
                _Staging.plan(L, a, True, threads, tid, row0, m_size),
                _Staging.plan(L, b, False, threads, tid, col0, n_size),
            )
            tiles = (a_tile, b_tile)
            for staging, tile in zip(stagings, tiles):
                staging.store(tile, None, staging.fetch(L, batch_multi, _u32(0), k_size))
            B.barrier()
            sg = B.subgroup_id()
            a_first = (sg / _u32(SUBGROUPS // 2)) * _u32(SUB_M * A_ROW)  # the subgroup's first row of A
            b_first = (sg % _u32(SUBGROUPS // 2)) * _u32(SUB_N)  # and column of B

            def step(s: Value, *acc: Value) -> tuple[Value, ...]:
                after = s + 1
                k_next = B.select(after < _u32(k_steps), after, _u32(k_steps - 1)) * _u32(BK)
                fetched = [st.fetch(L, batch_multi, k_next, k_size) for st in stagings]  # in flight meanwhile
                this = s & 1
                a_base = this * _u32(BM * A_ROW) + a_first
                b_base = this * _u32(BK * B_ROW) + b_first
                acc = list(acc)
                for sub in range(BK // MATRIX):  # k ascends: the blocks in the order of the contract
                    a_m = [
                        a_tile.load_matrix(_plus(a_base, (MATRIX * i) * A_ROW + MATRIX * sub), A_MATRIX, A_ROW)
                        for i in range(SUB_M // MATRIX)
                    ]
                    b_m = [
                        b_tile.load_matrix(_plus(b_base, MATRIX * sub * B_ROW + MATRIX * j), B_MATRIX, B_ROW)
                        for j in range(SUB_N // MATRIX)
                    ]
                    for i, a_i in enumerate(a_m):
                        for j, b_j in enumerate(b_m):
                            t = i * len(b_m) + j
                            acc[t] = B.matrix_mul_add(a_i, b_j, acc[t])
                other = this ^ 1
                for staging, tile, values, size in zip(stagings, tiles, fetched, (BM * A_ROW, BK * B_ROW)):
                    staging.store(tile, other * _u32(size), values)
                B.barrier()  # one per step: the buffer written here was last read before the previous one
                return tuple(acc)

            count = (SUB_M // MATRIX) * (SUB_N // MATRIX)
            start = B.matrix_fill(B.const_bits(0x80000000, T.float32), ACC_MATRIX)
            acc = B.loop(_u32(0), _u32(k_steps), _u32(1), (start,) * count, step)
            origin = (batch_index, batch_multi), (row0, col0), (m_size, n_size)
            _epilogue(L, root, mm, out_ref, acc, c_block, sg, tid, subgroup_size, origin)
    return GroupTemplate([L.template(grid)])


def _epilogue(L, root, mm, out_ref, acc, c_block, sg, tid, subgroup_size, origin) -> None:
    """Each accumulator through shared memory: subgroup q's block is read by invocations q·S ... q·S + S - 1."""
    batch, (row0, col0), (m_size, n_size) = origin
    block = MATRIX * MATRIX
    q = tid / _u32(subgroup_size)  # whose block this invocation reads (any invocation may: a barrier is between)
    lane = tid % _u32(subgroup_size)
    q_row = row0 + (q / _u32(SUBGROUPS // 2)) * _u32(SUB_M)
    q_col = col0 + (q % _u32(SUBGROUPS // 2)) * _u32(SUB_N)
    per_row = SUB_N // MATRIX
    for t, matrix in enumerate(acc):
        i, j = divmod(t, per_row)
        c_block.store_matrix(sg * _u32(block), matrix, MATRIX)
        B.barrier()
        for r in range(block // subgroup_size):
            e = _plus(lane, r * subgroup_size)
            value = c_block[q * _u32(block) + e]
            row = _plus(q_row, MATRIX * i) + e / _u32(MATRIX)
            col = _plus(q_col, MATRIX * j) + e % _u32(MATRIX)
            row_ok = None if m_size % BM == 0 else row < _u32(m_size)
            col_ok = None if n_size % BN == 0 else col < _u32(n_size)
            inside = row_ok if col_ok is None else (col_ok if row_ok is None else row_ok & col_ok)
            store_output(L, root, mm, out_ref, value, batch, (row, col), inside)
        B.barrier()  # the block is overwritten by the next accumulator
