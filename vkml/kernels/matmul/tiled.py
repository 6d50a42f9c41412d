"""The matmul template: a tiled kernel with shared-memory staging and register blocking.

A ``matmul`` node (vkml/graph/node.py) computes C[..., m, n] = Σ_k A[..., m, k] · B[..., k, n] for
float operands (float16 is widened exactly on load). One workgroup owns a ``BM × BN`` tile
of C; per K-step it stages a ``BM × BK`` tile of A and a ``BK × BN`` tile of B in shared
memory, and each invocation accumulates a ``TM × TN`` register tile from them. The next
step's tiles are loaded before this step's are used and go to a second shared buffer, so
global latency overlaps the arithmetic and each step needs one barrier. Staging loads walk
each operand's contiguous axis (``x @ w.T`` reads w along its rows).

Accumulation order (the contract's named exception for matmul, docs/ops/matmul.md): every
output starts from -0.0 (the exact identity of IEEE addition) and adds the float32 products
``a[k] · b[k]`` for k = 0, 1, …, K-1 one after the other, each product and each sum rounded
(NoContraction). The order does not depend on the tile sizes, the device or the layout, so
every configuration (and the CPU interpreter) gives the same bits. On GPUs with the large
tiles, products of at least ``FMA_MIN_MULTIPLY_ADDS`` (a batch's together) make each step one ``mul_add`` instead,
which the device may round once (a fused multiply-add: twice the arithmetic rate); the order
and the error bound stay, the bits may differ from the CPU's (``VKML_MATMUL_FMA``: ``0``
never, ``1`` at every size).

Tails need no predicate in the inner loop: a position past M, N or K loads A as -0.0 and B
as +0.0, so a padded k contributes the product -0.0, and ``x + (-0.0)`` is ``x`` for every x
(a sum of -0.0 products stays -0.0). Rows and columns past M and N are never stored.

The elementwise consumers of the product (bias, activation: ``relu(x @ w + b)``) are
computed at the store, through ``Lowering.value`` with the accumulator as the fused value.

Skinny products get other tiles of the same template on large GPUs (``skinny_config``): with
K ≤ 8 the stores are the work, so the columns are unpacked and 32 invocations wide; with a
side ≤ 8 and a long K there are too few outputs for the square tiles' workgroups, so each
owning invocation keeps one output and extra invocations only stage (``invocations``), with
K-steps up to 256 deep. The order of the sum, hence the bits, stays the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ... import config as vkml_config
from ...graph.node import Node, Op
from ...ir import builder as B
from ...ir import types as T
from ...ir.core import Value
from ...ops.cast import narrow
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
    local_index,
    pow2ceil,
    unravel,
)

ROW_PAD = 4  # shared rows are BM + 4 (BN + 4) long: a warp storing down a column then hits distinct banks


@dataclass(frozen=True)
class MatmulConfig:
    """Tile sizes: C tile ``bm × bn`` per workgroup, ``bk`` per K-step, ``tm × tn`` per invocation.

    >>> MatmulConfig(64, 64, 8, 4, 4).threads
    256
    """

    bm: int
    bn: int
    bk: int
    tm: int
    tn: int
    fused: bool = False  # accumulate with mul_add (a device may fuse it) instead of mul, add
    packed: bool = False  # an invocation's rows (columns) are adjacent, not one thread-row apart
    # Invocations per workgroup when more than ``owners``: the extra ones only stage tiles (skinny
    # products have too few outputs to keep enough loads in flight, and no split-K is allowed).
    invocations: int = 0
    # Shared rows are bm + pad (bn + pad) long. 4 suits K-steps of 8 (a warp's staging stores walk
    # 8 k by 4 rows); 1 suits long K-steps read along k (32 lanes, 32 k: an odd row is conflict-free).
    pad: int = ROW_PAD

    @property
    def owners(self) -> int:
        """The invocations that own ``tm × tn`` outputs each (the first ones of the workgroup)."""
        return (self.bm // self.tm) * (self.bn // self.tn)

    @property
    def threads(self) -> int:
        return max(self.owners, self.invocations)

    def rows_of(self, ty: Value) -> tuple[Value, int]:
        """The first of invocation row ``ty``'s rows in the tile, and the distance between its rows.

        Spread (default), rows ty, ty + BM/TM, ...: a warp's shared loads hit distinct banks as
        scalars. Packed, rows ty·TM ... ty·TM + TM - 1: adjacent, for compilers that merge them
        into vector loads (a benchmarking choice).
        """
        return (ty * _u32(self.tm), 1) if self.packed and self.tm > 1 else (ty, self.bm // self.tm)

    def cols_of(self, tx: Value) -> tuple[Value, int]:
        """As ``rows_of``, for invocation column ``tx``."""
        return (tx * _u32(self.tn), 1) if self.packed and self.tn > 1 else (tx, self.bn // self.tn)

    @property
    def shared_bytes(self) -> int:
        return 4 * 2 * self.bk * (self.bm + self.bn + 2 * self.pad)  # two buffers of each tile

    def __str__(self) -> str:
        flags = ("/fma" if self.fused else "") + ("/packed" if self.packed else "")
        flags += f"/i{self.invocations}" if self.invocations > self.owners else ""
        flags += f"/pad{self.pad}" if self.pad != ROW_PAD else ""
        return f"{self.bm}x{self.bn}x{self.bk}/{self.tm}x{self.tn}{flags}"


@dataclass(frozen=True)
class TileFamily:
    """The largest tiles one kind of device gets: invocations along m and n, per invocation, BK.

    Smaller products shrink them (``choose_config``). The families are module constants so
    that a benchmark can try others: ``kernels_matmul.LARGE_GPU_TILES = TileFamily(16, 16, 8,
    8, 16)`` and ``schedule.clear_template_cache()``.
    """

    wm: int
    wn: int
    tm: int
    tn: int
    bk: int
    packed: bool = False


INTERPRETER_TILES = TileFamily(16, 16, 2, 2, 8)  # CPU reference: many lanes, few instructions per lane
SMALL_GPU_TILES = TileFamily(16, 16, 4, 4, 8)  # lavapipe and other devices with modest limits
# 32-wide subgroups, ≥ 48 KiB shared memory (packed measured fastest there: bench/bench_matmul_tiles.py)
LARGE_GPU_TILES = TileFamily(16, 16, 8, 8, 8, packed=True)
# The same devices, for a product with a side of at most NARROW_SIDE or a K of at most NARROW_K (a
# convolution's products: 64 output channels, or the input gradient's K of 64 channels): 8×16
# invocations with 8×8 outputs each, where the large family would shrink to 4×8 outputs an invocation
# (a side of 64) or fill 128×128 tiles whose short K leaves the stores as the time. The order of each
# output's sum is K's alone, so the bits are the large family's. Measured per shape in
# docs/benchmarks.md (session 11): a third to two fifths less time on conv2d's products, while square
# products with a long K stay faster on the large family.
NARROW_GPU_TILES = TileFamily(8, 16, 8, 8, 8, packed=True)
NARROW_SIDE = 64
NARROW_K = 128
# With the large tiles and VKML_MATMUL_FMA=auto, products of at least this many multiply-adds
# (512³) fuse them: below it a matmul is a few microseconds either way, and keeping the CPU's
# bits there lets small models (the demo's) reproduce the CPU reference's training bit for bit.
FMA_MIN_MULTIPLY_ADDS = 1 << 27


def _fit(size: int, threads: int, per_thread: int) -> tuple[int, int]:
    """Shrink a tile side (threads × per_thread) while it is at least twice ``size``."""
    while threads * per_thread >= 2 * size and per_thread > 1:
        per_thread //= 2
    while threads * per_thread >= 2 * size and threads > 1:
        threads //= 2
    return threads, per_thread


def choose_config(features, m: int, n: int, k: int) -> MatmulConfig:
    """Tile sizes for an ``m × k`` by ``k × n`` product on a device (``features`` None: the CPU interpreter).

    >>> str(choose_config(None, 256, 256, 256))
    '32x32x8/2x2'
    >>> str(choose_config(DeviceFeatures.h200_like(), 4096, 4096, 4096))
    '128x128x8/8x8/fma/packed'
    >>> str(choose_config(DeviceFeatures.h200_like(), 64, 64, 64))  # small: the CPU's bits
    '64x64x8/8x4/packed'
    >>> str(choose_config(DeviceFeatures.h200_like(), 64, 200704, 576))  # conv2d's product: NARROW_GPU_TILES
    '64x128x8/8x8/fma/packed'
    """
    fused = False
    if features is None:
        family = INTERPRETER_TILES
    elif _large_tiles(features):
        family = NARROW_GPU_TILES if min(m, n) <= NARROW_SIDE or k <= NARROW_K else LARGE_GPU_TILES
        policy = vkml_config.matmul_fma()
        fused = policy == "on" or (policy == "auto" and m * n * k >= FMA_MIN_MULTIPLY_ADDS)
    else:
        family = SMALL_GPU_TILES
    wm, wn = family.wm, family.wn
    while features is not None and wm * wn > features.max_workgroup_invocations:
        wm, wn = (wm // 2, wn) if wm >= wn else (wm, wn // 2)
    wm, tm = _fit(m, wm, family.tm)
    wn, tn = _fit(n, wn, family.tn)
    bk = min(family.bk, pow2ceil(max(k, 1)))
    config = MatmulConfig(wm * tm, wn * tn, bk, tm, tn, fused, family.packed)
    if family in (LARGE_GPU_TILES, NARROW_GPU_TILES):
        config = skinny_config(m, n, k, fused) or config
    while features is not None and config.shared_bytes > features.max_compute_shared_memory_size and config.bk > 1:
        config = replace(config, bk=config.bk // 2)
    return config


def _large_tiles(features) -> bool:
    """Whether a device gets the large (or narrow) tiles, and with them fused multiply-adds."""
    return (
        features.subgroup_size >= 32
        and features.max_compute_shared_memory_size >= 48 * 1024
        and features.max_workgroup_invocations >= 256
    )


def fused_over_batch(config: MatmulConfig, features, multiply_adds: int) -> MatmulConfig:
    """``config`` fused where a batched product's ``multiply_adds`` (over the whole batch) reach
    ``FMA_MIN_MULTIPLY_ADDS`` under ``VKML_MATMUL_FMA=auto`` on a device with the large tiles: a batch of
    products is as long as their sum (conv2d's implicit GEMM, 64 products of 64 × 576 @ 576 × 3136,
    fuses as its one long product of 64 × 576 @ 576 × 200704 does). ``choose_config`` sees one product.

    >>> h200 = DeviceFeatures.h200_like()
    >>> fused_over_batch(choose_config(h200, 64, 3136, 576), h200, 64 * 64 * 3136 * 576).fused
    True
    """
    if config.fused or features is None or multiply_adds < FMA_MIN_MULTIPLY_ADDS or not _large_tiles(features):
        return config
    return replace(config, fused=True) if vkml_config.matmul_fma() == "auto" else config


# Products the square tiles serve badly (issue 7), on large GPUs. K at most SHORT_K: the time
# is the stores, so a warp writes 32 adjacent outputs (unpacked columns, 32 invocations wide).
SHORT_K = 8
SHORT_K_TILES = TileFamily(8, 32, 4, 4, 8)
# An output side at most SKINNY_SIDE long with a longer K: few outputs, each a chain of K adds
# that no split may reorder, so one output per owning invocation, few rows (columns) per
# workgroup for many workgroups, and long K-steps staged by extra invocations, which keep
# M·SKINNY_BK values in flight: the time is then about K / SKINNY_BK memory latencies.
SKINNY_SIDE = 8
SKINNY_OUTPUTS = 64  # outputs per workgroup: a side of 2 gets 32 rows (128 bytes of a transposed operand)
SKINNY_OUTPUTS_PER_OWNER = 1  # along the skinny side: more reuse each shared load, fewer chains run at once
SKINNY_BK = 256  # at most: halved until two buffers fit SKINNY_SHARED_BYTES
SKINNY_SHARED_BYTES = 48 * 1024  # what every device with the large tiles has
SKINNY_INVOCATIONS = 128
SKINNY_LONG_SIDE = 32  # the long side's tile at most (128 bytes of a transposed operand)
SKINNY_PAD = 1


def skinny_config(m: int, n: int, k: int, fused: bool = False) -> MatmulConfig | None:
    """The large GPUs' tiles for a product with K ≤ ``SHORT_K`` or a side ≤ ``SKINNY_SIDE``, else None.

    >>> str(skinny_config(4096, 4096, 2))  # x @ w.T with 2 input features
    '32x128x2/4x4'
    >>> str(skinny_config(4096, 3, 4096))  # h @ w.T with 3 output features
    '16x4x256/1x1/i128/pad1'
    >>> str(skinny_config(2, 4096, 4096))  # x.T @ g: a weight gradient with 2 input features
    '2x32x128/1x1/i128/pad1'
    >>> skinny_config(512, 512, 512) is None
    True
    """
    if k <= SHORT_K:
        family = SHORT_K_TILES
        wm, tm = _fit(m, family.wm, family.tm)
        wn, tn = _fit(n, family.wn, family.tn)
        return MatmulConfig(wm * tm, wn * tn, pow2ceil(max(k, 1)), tm, tn, fused)
    if min(m, n) > SKINNY_SIDE:
        return None
    bk = min(SKINNY_BK, pow2ceil(k))
    if n <= m:
        bn = pow2ceil(n)
        bm = _shrunk(min(SKINNY_LONG_SIDE, max(1, SKINNY_OUTPUTS // bn)), m)
        tm, tn = 1, min(bn, SKINNY_OUTPUTS_PER_OWNER)
    else:
        bm = pow2ceil(m)
        bn = _shrunk(min(SKINNY_LONG_SIDE, max(1, SKINNY_OUTPUTS // bm)), n)
        tm, tn = min(bm, SKINNY_OUTPUTS_PER_OWNER), 1
    config = MatmulConfig(bm, bn, bk, tm, tn, fused, invocations=SKINNY_INVOCATIONS, pad=SKINNY_PAD)
    while config.shared_bytes > SKINNY_SHARED_BYTES and config.bk > 1:
        config = replace(config, bk=config.bk // 2)
    return config


def _shrunk(side: int, size: int) -> int:
    """Halve a tile side while it is at least twice ``size``."""
    while side >= 2 * size and side > 1:
        side //= 2
    return side


def computed_operands(node: Node, is_loaded) -> list[Node]:
    """The nodes under matmul operand ``node`` to realize before the matmul kernel runs.

    Each element of A is loaded once per column tile and each of B once per row tile, so only
    index arithmetic and conversions to float (views, casts, constants) stay inside the loads;
    the first other node on each path is computed by a kernel of its own. ``is_loaded(n)``
    says whether ``n`` is read from a buffer anyway.
    """
    found, stack = [], [node]
    while stack:
        n = stack.pop()
        if n.realized or is_loaded(n) or n.op == Op.CONST or n in found:
            continue
        # (a bit view as a float is computed: a float16 one is stored as its bits, read as float16 here)
        if n.op == Op.VIEW or (n.op == Op.CAST and n.dtype.is_float and not n.arg.bits):
            stack.extend(n.srcs)
        else:
            found.append(n)
    return found


class _Staging:
    """How the invocations copy one operand's tile into shared memory, one K-step at a time.

    The tile has ``outer`` rows of A (columns of B) by ``bk`` values of k, kept k-major in
    shared memory (row kk holds the ``outer`` values of step kk). Element e = tid + r·threads
    of it is taken along the operand's contiguous axis, so that consecutive invocations read
    consecutive addresses: (e // bk, e % bk) when k is contiguous (a row-major A, a transposed
    B as in ``x @ w.T``), else (e % outer, e // outer). Everything but k is fixed for the whole
    loop and computed once, before it.
    """

    def __init__(self, operand: Node, is_a: bool, config: MatmulConfig, tid: Value, origin: Value, extent: int):
        self.operand, self.is_a = operand, is_a
        outer, bk, threads = (config.bm if is_a else config.bn), config.bk, config.threads
        count = outer * bk
        self.row = outer + config.pad
        self.size = bk * self.row  # elements of one shared buffer
        along_k = _contiguous_along_k(operand, is_a)
        exact = extent % outer == 0  # no tile reaches past the operand's rows (columns)
        self.slots = []
        share = _k_sharing(operand, along_k, outer, count, threads)
        for r in range(-(-count // threads)):
            e = _plus(tid, r * threads)
            present = None
            if (r + 1) * threads > count:  # a partial last round: spare invocations load element 0, store nothing
                present = e < _u32(count)
                e = B.select(present, e, _u32(0))
            if share > 1:  # rounds r = q·share + j: unit u = tid + q·threads, its share elements one kk apart in o
                u, j, per = _plus(tid, (r // share) * threads), r % share, outer // share
                o, kk = _plus(u % _u32(per), j * per), u / _u32(per)
            else:
                o, kk = (e / _u32(bk), e % _u32(bk)) if along_k else (e % _u32(outer), e / _u32(outer))
            index, inside = _clamp(origin + o, extent, exact)
            self.slots.append((kk, index, inside, kk * _u32(self.row) + o, present))

    def fetch(self, L: Lowering, batch_multi: tuple, k0: Value, k_size: int, bk: int) -> list[Value]:
        """This invocation's elements of the tile at ``k0``; positions past the operand are -0.0 (A) or +0.0 (B)."""
        fill = B.const_bits(0x80000000, T.float32) if self.is_a else B.const(0.0, T.float32)
        values = []
        for kk, index, inside, _, _ in self.slots:
            k, k_inside = _clamp(k0 + kk, k_size, k_size % bk == 0)
            multi = (*batch_multi, index, k) if self.is_a else (*batch_multi, k, index)
            v = L.value(self.operand, Index(self.operand.shape, multi=multi))
            ok = _and(inside, k_inside)
            values.append(B.select(ok, v, fill) if ok is not None else v)
        return values

    def store(self, tile: B.SharedRef, buffer: Value | None, values: list[Value]) -> None:
        """Write fetched elements into shared buffer 0 (``buffer`` None) or at element offset ``buffer``."""
        for (_, _, _, address, present), v in zip(self.slots, values):
            with _maybe_if(present):
                tile[address if buffer is None else buffer + address] = v


# A gathered operand's invocation takes this many elements of one k a K-step (``_k_sharing``).
K_SHARING = 4


def _k_sharing(operand: Node, along_k: bool, outer: int, count: int, threads: int) -> int:
    """How many of an invocation's staged elements share one k: up to ``K_SHARING`` for an operand staged across k
    that is a view of several levels (a convolution's windows: each k is (channel, *tap), divided out of k
    once for the elements sharing it), where whole rounds allow and runs of at least 8 neighbouring
    invocations still read neighbouring elements (``outer / K_SHARING``: 32 with the large families' 128-wide
    tiles, a warp); else 1 (each round its own k). The staged tile is the same, so are the sums."""
    node = operand
    while node.op == Op.CAST:
        node = node.srcs[0]
    gathered = node.op == Op.VIEW and len(node.arg.views) > 1
    if along_k or not gathered or count % threads:
        return 1
    share = math.gcd(K_SHARING, count // threads)  # whole rounds: the invocation's rounds in runs of share
    return share if outer % share == 0 and outer // share >= 8 else 1


def _contiguous_along_k(operand: Node, is_a: bool) -> bool:
    """Whether neighbouring k of ``operand`` are neighbours in memory (default: row-major operands)."""
    node = operand
    while node.op == Op.CAST:
        node = node.srcs[0]
    if node.op == Op.VIEW and len(node.arg.views) == 1:
        strides = node.arg.views[0].strides
        k_stride, outer_stride = (strides[-1], strides[-2]) if is_a else (strides[-2], strides[-1])
        if abs(k_stride) == 1 or abs(outer_stride) == 1:
            return abs(k_stride) == 1
    return is_a


def _clamp(index: Value, limit: int, always_inside: bool) -> tuple[Value, Value | None]:
    """``index`` clamped into ``[0, limit)`` and whether it was inside (None: the tiling guarantees it)."""
    if always_inside:
        return index, None
    inside = index < _u32(limit)
    return B.select(inside, index, _u32(0)), inside


def _plus(v: Value, c: int) -> Value:
    return v + _u32(c) if c else v


def tile_of(wg: Value, tiles: tuple[int, int], batch: tuple, tile: tuple[int, int]) -> tuple:
    """The C tile workgroup ``wg`` owns, tiles in row-major order within a batch entry, batch
    entries in turn: ``(batch_index, batch_multi, row0, col0)``, its first row and column."""
    (tiles_m, tiles_n), (bm, bn) = tiles, tile
    tile_n = wg % _u32(tiles_n) if tiles_n > 1 else _u32(0)
    rest = wg / _u32(tiles_n) if tiles_n > 1 else wg
    tile_m = rest % _u32(tiles_m) if tiles_m > 1 else _u32(0)
    batch_index = (rest / _u32(tiles_m) if tiles_m > 1 else rest) if math.prod(batch) > 1 else _u32(0)
    batch_multi = unravel(batch_index, tuple(batch)) if batch else ()
    return batch_index, batch_multi, tile_m * _u32(bm), tile_n * _u32(bn)


def lower_matmul(root: Node, mm: Node, leaves, baked, config: MatmulConfig) -> GroupTemplate:
    """One kernel computing ``mm`` tile by tile and ``root`` (its elementwise consumers) at the store."""
    a, b = mm.srcs
    *batch, m_size, k_size = a.shape
    n_size = b.shape[-1]
    bm, bn, bk, tm, tn = config.bm, config.bn, config.bk, config.tm, config.tn
    wn = bn // tn
    threads = config.threads
    tiles_m, tiles_n = -(-m_size // bm), -(-n_size // bn)
    total = math.prod(batch) * tiles_m * tiles_n
    grid = fold_grid(total)
    L = Lowering(kernel_name(root, "MM"), (threads, 1, 1), leaves, baked)
    out_ref = L.bind_buffer(root.dtype, "write", "out", BufferRole(BufferKind.OUT, root))
    a_stride, b_stride = bm + config.pad, bn + config.pad
    k_steps = -(-k_size // bk)
    buffers = 2 if k_steps > 1 else 1  # double buffering: the next tile is stored while this one is read
    a_tile = L.kb.shared("a_tile", T.float32, buffers * bk * a_stride)
    b_tile = L.kb.shared("b_tile", T.float32, buffers * bk * b_stride)
    with L.kb:
        wg = linear_workgroup(grid)
        # A folded grid may have spare workgroups; the test is uniform per workgroup, so barriers stay legal.
        with _maybe_if(wg < _u32(total) if grid[0] * grid[1] > total else None):
            batch_index, batch_multi, row0, col0 = tile_of(wg, (tiles_m, tiles_n), batch, (bm, bn))
            tid = local_index()
            owner = tid < _u32(config.owners) if threads > config.owners else None
            tx, ty = (tid % _u32(wn), tid / _u32(wn)) if wn > 1 else (_u32(0), tid)
            (row_first, row_step), (col_first, col_step) = config.rows_of(ty), config.cols_of(tx)
            stagings = (_Staging(a, True, config, tid, row0, m_size), _Staging(b, False, config, tid, col0, n_size))
            tiles = (a_tile, b_tile)
            for staging, tile in zip(stagings, tiles):
                staging.store(tile, None, staging.fetch(L, batch_multi, _u32(0), k_size, bk))
            B.barrier()

            def step(s: Value, *acc: Value) -> tuple[Value, ...]:
                fetched = []
                if buffers > 1:  # issue the next tile's loads first: they complete while this tile is used
                    after = s + 1
                    k_next = B.select(after < _u32(k_steps), after, _u32(k_steps - 1)) * _u32(bk)
                    fetched = [st.fetch(L, batch_multi, k_next, k_size, bk) for st in stagings]
                    this = s & 1
                    a_base, b_base = (this * _u32(st.size) for st in stagings)
                    a_row, b_col = a_base + row_first, b_base + col_first
                else:
                    a_row, b_col = row_first, col_first

                def multiply_add() -> tuple[Value, ...]:
                    out = list(acc)
                    for kk in range(bk):  # unrolled: k ascends, the order of the contract
                        av = [a_tile[_plus(a_row, kk * a_stride + i * row_step)] for i in range(tm)]
                        bv = [b_tile[_plus(b_col, kk * b_stride + j * col_step)] for j in range(tn)]
                        for i in range(tm):
                            for j in range(tn):
                                out[i * tn + j] = _accumulate(out[i * tn + j], av[i], bv[j], config.fused)
                    return tuple(out)

                # Staging-only invocations (config.invocations) skip the arithmetic; whole warps when owners is a multiple of 32.
                acc = B.if_else(owner, multiply_add, lambda: acc) if owner is not None else multiply_add()
                if buffers > 1:
                    other = this ^ 1
                    for staging, tile, values in zip(stagings, tiles, fetched):
                        staging.store(tile, other * _u32(staging.size), values)
                    B.barrier()  # one per step: the buffer written here was last read before the previous one
                return acc

            minus_zero = B.const_bits(0x80000000, T.float32)
            acc = B.loop(_u32(0), _u32(k_steps), _u32(1), (minus_zero,) * (tm * tn), step)
            origin = (row0 + row_first, row_step), (col0 + col_first, col_step)
            with _maybe_if(owner):
                _epilogue(L, root, mm, out_ref, acc, config, (batch_index, batch_multi), origin)
    return GroupTemplate([L.template(grid)])


def _epilogue(L: Lowering, root: Node, mm: Node, out_ref, acc, config: MatmulConfig, batch, origin) -> None:
    """Store the register tile, computing ``root`` from each accumulator (bias, activation, ...)."""
    *_, m_size, n_size = mm.shape
    (row_base, row_step), (col_base, col_step) = origin
    for i in range(config.tm):
        row = _plus(row_base, i * row_step)
        row_ok = None if m_size % config.bm == 0 else row < _u32(m_size)
        for j in range(config.tn):
            col = _plus(col_base, j * col_step)
            col_ok = None if n_size % config.bn == 0 else col < _u32(n_size)
            store_output(L, root, mm, out_ref, acc[i * config.tn + j], batch, (row, col), _and(row_ok, col_ok))


def store_output(L: Lowering, root: Node, mm: Node, out_ref, value: Value, batch, at, inside) -> None:
    """Store ``root`` at C's position ``at`` = (row, col) of ``batch``, ``value`` being the float32 sum there.

    The sum narrows to float16 or bfloat16 in software (the contract's rounding) when the product is one;
    ``inside`` (None: always) says whether the position exists.
    """
    batch_index, batch_multi = batch
    *_, m_size, n_size = mm.shape
    row, col = at
    lin = (batch_index * _u32(m_size) + row) * _u32(n_size) + col
    with _maybe_if(inside):
        L.fused[id(mm)] = narrow(value, mm.dtype)  # float16 and bfloat16 round once
        multi = (*batch_multi, row, col) if root.shape == mm.shape else None
        result = L.value(root, Index(root.shape, lin=lin, multi=multi))
        L.store(out_ref, root.dtype, lin, result)


def _accumulate(acc: Value, a: Value, b: Value, fused: bool) -> Value:
    """``acc + a·b``: rounded twice, or one ``mul_add`` that a device may round once."""
    return B.emit("mul_add", a, b, acc) if fused else acc + a * b


def _and(a: Value | None, b: Value | None) -> Value | None:
    if a is None:
        return b
    return a if b is None else a & b


class _maybe_if:
    """``with B.if_(cond)`` when ``cond`` is a Value; nothing when it is None (always true)."""

    def __init__(self, cond: Value | None):
        self._ctx = B.if_(cond) if cond is not None else None

    def __enter__(self):
        if self._ctx is not None:
            self._ctx.__enter__()

    def __exit__(self, *exc):
        if self._ctx is not None:
            return self._ctx.__exit__(*exc)
        return False
