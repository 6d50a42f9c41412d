"""The fused attention backward: two kernels that recompute the weights from the saved log-sum-exp.

With P = exp(S - lse) (the softmax weights; 0 at a masked score and in a row with no unmasked key)
and D = rowsum(dO · O) (computed before, one float32 per query row):

    dS = P · (dO Vᵀ - D)      dQ = dS K · scale      dK = dSᵀ Q · scale      dV = Pᵀ dO

- ``query_kernel`` (dQ): as the forward, a workgroup owns ``ROWS`` query rows and walks the key
  blocks in ascending order; lane ``c`` adds the dS-weighted keys into its dQ columns
  c, c + LANES, ...
- ``key_kernel`` (dK, dV): a workgroup owns ``ROWS`` keys of one key/value batch entry and walks
  the query blocks in ascending order — for each query head of its group in turn (``enable_gqa``)
  — so a key's gradient sums over its group's heads in a fixed order, with no atomics.

Where the forward is register-tiled (``AttentionShape.tiled``) and their tiles fit, the backward is too
(``tiled_query_kernel``, ``tiled_key_kernel``: an invocation owns a small tile of (query, key) pairs; 24 query
rows and 32-key blocks for dQ, 16 keys and 32-query blocks for dK and dV), with the same formulas and sums over
the larger blocks.

Neither writes an (L, S) matrix. The scores are computed exactly as the forward computes them
(``attention.masked_score``), and every sum runs in an order fixed by the shapes, so every device
gives the same bits. These kernels take inputs whose batch dims are the full batch (or, for keys
and values, the full batch with fewer heads under ``enable_gqa``); a broadcast batch takes the
composite backward (vkml/nn/functional_attention.py).
"""

from __future__ import annotations

import functools

from ..ir import builder as B
from ..ir import types as T
from ..ir.core import Kernel, Value
from ..ir.verify import verify_kernel
from ..ops import mathlib as M
from .attention import (
    GROUPS,
    LANES,
    NEG_INF,
    ROWS,
    THREADS,
    TILED_SHARED_LIMIT,
    AttentionShape,
    Dropout,
    Operand,
    _batch_offsets,
    _f32,
    key_blocks_end,
    masked_score,
    own_rows,
    row_dot,
    stage,
)
from .index import _u32
from .lowering import fold_grid, linear_workgroup


def _batch_name(shape: AttentionShape) -> str:
    return "x".join(map(str, shape.batch)) or "scalar"


def _weights(s: Value, lse_row: Value) -> Value:
    """P = exp(s - lse): 0 where the score is masked or the row has no unmasked key (lse = -inf)."""
    dead = B.eq(s, _f32(NEG_INF)) | B.eq(lse_row, _f32(NEG_INF))
    return B.select(dead, _f32(0.0), M.exp(s - lse_row))


def _columns(lane: Value, width: int) -> list[Value]:
    """The columns lane ``lane`` owns: lane, lane + LANES, ... (clamped to stay in range; not stored past ``width``)."""
    cols = []
    for a in range(-(-width // LANES)):
        col = lane + _u32(a * LANES)
        cols.append(B.select(col < _u32(width), col, _u32(0)))
    return cols


def _store_columns(buf, row_at: Value, lane: Value, width: int, values) -> None:
    for a, value in enumerate(values):
        col = lane + _u32(a * LANES)
        with B.if_(col < _u32(width)):
            buf[row_at + col] = value


def grid_of(shape: AttentionShape, keys: bool) -> tuple[int, int, int]:
    """The kernels' grids: query row blocks per batch entry (dQ) or key blocks per key batch entry (dK, dV)."""
    if keys:
        return fold_grid(key_batch_count(shape) * -(-shape.key_len // (DKV_KEYS if tiled(shape) else ROWS)))
    return fold_grid(shape.batch_count * -(-shape.query_len // (DQ_ROWS if tiled(shape) else ROWS)))


def key_batch_count(shape: AttentionShape) -> int:
    """Batch entries of the keys: the full batch, heads divided by the GQA groups."""
    return shape.batch_count // groups_of(shape)


def groups_of(shape: AttentionShape) -> int:
    return shape.key.divisors[-1] if shape.batch else 1


def _common(kb: B.KernelBuilder, shape: AttentionShape):
    dt = shape.dtype
    bufs = {name: kb.buffer(name, T.storage(dt)) for name in ("q", "k", "v", "grad")}
    bufs["mask"] = kb.buffer("mask", T.storage(shape.mask_dtype)) if shape.mask != "none" else None
    bufs["lse"] = kb.buffer("lse", T.float32)
    bufs["delta"] = kb.buffer("delta", T.float32)
    return bufs


def _first_query_batch(bk: Value, shape: AttentionShape, groups: int) -> Value:
    """The first query batch entry key batch entry ``bk`` serves: bk serves (bk // Hk) * H + (bk % Hk) * groups
    + g for g below ``groups`` (Hk key heads; ``enable_gqa``'s groups, else 1)."""
    heads_k = shape.batch[-1] // groups if shape.batch else 1
    outer = bk / _u32(heads_k)
    return outer * _u32(heads_k * groups) + (bk - outer * _u32(heads_k)) * _u32(groups)


def _query_head_bases(bq: Value, shape: AttentionShape, mask) -> tuple[Value | None, Value]:
    """(the mask's offset or None without a mask, the query's offset) of query batch entry ``bq``."""
    mask_base = None
    if mask is not None:
        mask_op = Operand(shape.mask_strides[:-2], (1,) * len(shape.batch))
        (mask_base,) = _batch_offsets(bq, shape, [mask_op])
    (q_base,) = _batch_offsets(bq, shape, [shape.query])
    return mask_base, q_base


def query_kernel(shape: AttentionShape) -> Kernel:
    """dQ (float32, the full batch's (..., L, E)): buffers q, k, v, grad, (mask,) lse, delta, dq; parameter scale."""
    dt = shape.dtype
    L, S, E, Ev = shape.query_len, shape.key_len, shape.head_dim, shape.value_dim
    kb = B.KernelBuilder(f"attention_dq_{_batch_name(shape)}_{L}x{S}x{E}x{Ev}", (THREADS, 1, 1))
    bufs = _common(kb, shape)
    dq = kb.buffer("dq", T.float32, "write")
    scale = kb.param("scale", T.float32)
    dropout = Dropout(kb, shape) if shape.dropout else None
    q_tile = kb.shared("q_tile", T.float32, ROWS * E)
    g_tile = kb.shared("g_tile", T.float32, ROWS * Ev)
    k_tile = kb.shared("k_tile", T.float32, LANES * (E + 1))
    v_tile = kb.shared("v_tile", T.float32, LANES * (Ev + 1))
    ds_tile = kb.shared("ds_tile", T.float32, THREADS)
    grid = grid_of(shape, keys=False)
    with kb:
        lid = B.convert(B.local_id(0), T.uint32)
        r, c = lid >> _u32(LANES.bit_length() - 1), lid & _u32(LANES - 1)
        w = linear_workgroup(grid)
        with B.if_(w < _u32(shape.batch_count * shape.row_blocks)):
            b = w / _u32(shape.row_blocks)
            row0 = (w - b * _u32(shape.row_blocks)) * _u32(ROWS)
            row = row0 + r
            operands = [shape.query, shape.key, shape.value]
            if bufs["mask"] is not None:
                operands.append(Operand(shape.mask_strides[:-2], (1,) * len(shape.batch)))
            offsets = _batch_offsets(b, shape, operands)
            mask_base = offsets[3] if bufs["mask"] is not None else None
            stage(q_tile, bufs["q"], dt, offsets[0], row0, L, E, E, ROWS)
            stage(g_tile, bufs["grad"], dt, b * _u32(L * Ev), row0, L, Ev, Ev, ROWS)
            q_row, g_row = own_rows(r, (q_tile, E), (g_tile, Ev))
            row_in = b * _u32(L) + B.select(row < _u32(L), row, _u32(0))
            lse_row, delta_row = bufs["lse"][row_in], bufs["delta"][row_in]
            end = key_blocks_end(shape, row0, ROWS, LANES)
            cols = _columns(c, E)

            def block(kb_i, *acc):
                key0 = kb_i * _u32(LANES)
                B.barrier()
                stage(k_tile, bufs["k"], dt, offsets[1], key0, S, E, E + 1, LANES)
                stage(v_tile, bufs["v"], dt, offsets[2], key0, S, Ev, Ev + 1, LANES)
                B.barrier()
                dot = row_dot(E, q_row, r * _u32(E), k_tile, c * _u32(E + 1))
                s = masked_score(shape, dot, scale, row, key0 + c, bufs["mask"], mask_base)
                p = _weights(s, lse_row)
                dp = row_dot(Ev, g_row, r * _u32(Ev), v_tile, c * _u32(Ev + 1))
                if dropout:  # the gradient reaches the weights the forward kept, scaled as they were
                    dp = dropout.apply(dropout.keep(b, row, key0 + c), dp)
                ds_tile[lid] = p * (dp - delta_row)
                B.barrier()

                def step(cc, *sums):
                    weight = ds_tile[r * _u32(LANES) + cc]
                    return tuple(t + weight * k_tile[cc * _u32(E + 1) + e] for t, e in zip(sums, cols))

                sums = B.loop(0, LANES, 1, tuple(_f32(-0.0) for _ in cols), step)
                return tuple(a + s_ for a, s_ in zip(acc, sums))

            acc = B.loop(_u32(0), end, _u32(1), tuple(_f32(0.0) for _ in cols), block)
            with B.if_(row < _u32(L)):
                _store_columns(dq, (b * _u32(L) + row) * _u32(E), c, E, [a * scale for a in acc])
    kernel = kb.finish()
    verify_kernel(kernel)
    return kernel


def key_kernel(shape: AttentionShape) -> Kernel:
    """dK and dV (float32, at the keys' and values' batch): buffers q, k, v, grad, (mask,) lse, delta, dk, dv."""
    dt = shape.dtype
    L, S, E, Ev = shape.query_len, shape.key_len, shape.head_dim, shape.value_dim
    kb = B.KernelBuilder(f"attention_dkv_{_batch_name(shape)}_{L}x{S}x{E}x{Ev}", (THREADS, 1, 1))
    bufs = _common(kb, shape)
    dk = kb.buffer("dk", T.float32, "write")
    dv = kb.buffer("dv", T.float32, "write")
    scale = kb.param("scale", T.float32)
    dropout = Dropout(kb, shape) if shape.dropout else None
    k_tile = kb.shared("k_tile", T.float32, ROWS * E)
    v_tile = kb.shared("v_tile", T.float32, ROWS * Ev)
    q_tile = kb.shared("q_tile", T.float32, LANES * (E + 1))
    g_tile = kb.shared("g_tile", T.float32, LANES * (Ev + 1))
    lse_tile = kb.shared("lse_tile", T.float32, LANES)
    delta_tile = kb.shared("delta_tile", T.float32, LANES)
    p_tile = kb.shared("p_tile", T.float32, THREADS)
    ds_tile = kb.shared("ds_tile", T.float32, THREADS)
    groups = groups_of(shape)
    key_blocks = -(-S // ROWS)
    grid = grid_of(shape, keys=True)
    with kb:
        lid = B.convert(B.local_id(0), T.uint32)
        r, c = lid >> _u32(LANES.bit_length() - 1), lid & _u32(LANES - 1)
        w = linear_workgroup(grid)
        with B.if_(w < _u32(key_batch_count(shape) * key_blocks)):
            bk = w / _u32(key_blocks)
            key0 = (w - bk * _u32(key_blocks)) * _u32(ROWS)
            key = key0 + r
            first_query_batch = _first_query_batch(bk, shape, groups)
            kv_offsets = _batch_offsets(first_query_batch, shape, [shape.key, shape.value])
            stage(k_tile, bufs["k"], dt, kv_offsets[0], key0, S, E, E, ROWS)
            stage(v_tile, bufs["v"], dt, kv_offsets[1], key0, S, Ev, Ev, ROWS)
            k_row, v_row = own_rows(r, (k_tile, E), (v_tile, Ev))
            dk_cols, dv_cols = _columns(c, E), _columns(c, Ev)
            query_blocks = -(-L // LANES)
            start = (key0 / _u32(LANES)) if shape.causal else _u32(0)  # earlier queries see none of these keys

            def head(g, *acc):
                bq = first_query_batch + g
                mask_base, q_base = _query_head_bases(bq, shape, bufs["mask"])

                def block(qb, *acc):
                    query0 = qb * _u32(LANES)
                    query = query0 + c
                    B.barrier()
                    stage(q_tile, bufs["q"], dt, q_base, query0, L, E, E + 1, LANES)
                    stage(g_tile, bufs["grad"], dt, bq * _u32(L * Ev), query0, L, Ev, Ev + 1, LANES)
                    with B.if_(lid < _u32(LANES)):
                        at = bq * _u32(L) + B.select(query0 + lid < _u32(L), query0 + lid, _u32(0))
                        lse_tile[lid] = bufs["lse"][at]
                        delta_tile[lid] = bufs["delta"][at]
                    B.barrier()
                    # q·k and dO·v: the products commute exactly, so the registers' row may be either factor
                    dot = row_dot(E, k_row, r * _u32(E), q_tile, c * _u32(E + 1))
                    s = masked_score(shape, dot, scale, query, key, bufs["mask"], mask_base)
                    p = _weights(s, lse_tile[c])
                    dp = row_dot(Ev, v_row, r * _u32(Ev), g_tile, c * _u32(Ev + 1))
                    if dropout:  # dV takes the kept weights; dS the kept part of dP, scaled as in the forward
                        keep = dropout.keep(bq, query, key)
                        p_tile[lid] = dropout.apply(keep, p)
                        dp = dropout.apply(keep, dp)
                    else:
                        p_tile[lid] = p
                    ds_tile[lid] = p * (dp - delta_tile[c])
                    B.barrier()
                    n_dk = len(dk_cols)

                    def step(cc, *sums):
                        at = r * _u32(LANES) + cc
                        weight, d_weight = p_tile[at], ds_tile[at]
                        new_dk = [t + d_weight * q_tile[cc * _u32(E + 1) + e] for t, e in zip(sums[:n_dk], dk_cols)]
                        new_dv = [t + weight * g_tile[cc * _u32(Ev + 1) + j] for t, j in zip(sums[n_dk:], dv_cols)]
                        return (*new_dk, *new_dv)

                    sums = B.loop(0, LANES, 1, tuple(_f32(-0.0) for _ in range(len(acc))), step)
                    return tuple(a + s_ for a, s_ in zip(acc, sums))

                return B.loop(start, _u32(query_blocks), _u32(1), acc, block)

            acc = B.loop(_u32(0), _u32(groups), _u32(1), tuple(_f32(0.0) for _ in dk_cols + dv_cols), head)
            with B.if_(key < _u32(S)):
                _store_columns(dk, (bk * _u32(S) + key) * _u32(E), c, E, [a * scale for a in acc[: len(dk_cols)]])
                _store_columns(dv, (bk * _u32(S) + key) * _u32(Ev), c, Ev, acc[len(dk_cols) :])
    kernel = kb.finish()
    verify_kernel(kernel)
    return kernel


@functools.lru_cache(maxsize=64)
def cached_kernels(shape: AttentionShape) -> tuple[Kernel, Kernel]:
    """(query_kernel, key_kernel) of ``shape`` (the tiled ones where ``tiled``), built once per shape."""
    if tiled(shape):
        return tiled_query_kernel(shape), tiled_key_kernel(shape)
    return query_kernel(shape), key_kernel(shape)


def shared_bytes(shape: AttentionShape) -> int:
    """Shared memory the larger of the two backward kernels of ``shape`` takes."""
    if tiled(shape):
        return tiled_shared_bytes(shape.head_dim, shape.value_dim)
    return untiled_shared_bytes(shape.head_dim, shape.value_dim)


def untiled_shared_bytes(head_dim: int, value_dim: int) -> int:
    """Shared memory the larger of the two untiled backward kernels takes."""
    e, ev = head_dim, value_dim
    dq = ROWS * e + ROWS * ev + LANES * (e + 1) + LANES * (ev + 1) + THREADS
    dkv = ROWS * e + ROWS * ev + LANES * (e + 1) + LANES * (ev + 1) + 2 * LANES + 2 * THREADS
    return 4 * max(dq, dkv)


# The register-tiled backward (``AttentionShape.tiled`` and tiles within attention.TILED_SHARED_LIMIT): the
# forward's GROUPS x LANES layout, an invocation owning a tile of (query, key) pairs. dQ: group g holds query rows
# g·DQ_TILE_ROWS + i of the workgroup's DQ_ROWS, lane c keys c + LANES·t of each DQ_KEYS block, and the dQ sums
# take DQ_TILE_ROWS rows x E / LANES columns an invocation. dK, dV: group g holds keys g·DKV_TILE_KEYS + i of the
# workgroup's DKV_KEYS, lane c queries c + LANES·t of each DKV_QUERIES block. Every step of the dot products then
# loads one value per tile row and column (the untiled kernels: one a product), and a block takes three barriers.
DQ_TILE_ROWS, DQ_TILE_KEYS = 3, 2
DQ_ROWS, DQ_KEYS = GROUPS * DQ_TILE_ROWS, LANES * DQ_TILE_KEYS
DKV_TILE_KEYS, DKV_TILE_QUERIES = 2, 2
DKV_KEYS, DKV_QUERIES = GROUPS * DKV_TILE_KEYS, LANES * DKV_TILE_QUERIES


def tiled_shared_bytes(head_dim: int, value_dim: int) -> int:
    """Shared memory the larger of the two tiled backward kernels takes."""
    e, ev = head_dim, value_dim
    dq = DQ_ROWS * (e + ev) + DQ_KEYS * (e + 1 + ev + 1) + DQ_ROWS * DQ_KEYS
    dkv = DKV_KEYS * (e + ev) + DKV_QUERIES * (e + 1 + ev + 1) + 2 * DKV_KEYS * DKV_QUERIES
    return 4 * max(dq, dkv)


def tiled(shape: AttentionShape) -> bool:
    """Whether the backward of ``shape`` takes the tiled kernels: the forward did, and their tiles fit the limit
    (both bounds of the shape alone, so every device runs the same kernels)."""
    return shape.tiled and tiled_shared_bytes(shape.head_dim, shape.value_dim) <= TILED_SHARED_LIMIT


def _tile_dots(length: int, a_tile, a_at: list, b_tile, b_at: list) -> list[list[Value]]:
    """[i][t] = Σ_e a_tile[a_at[i] + e] · b_tile[b_at[t] + e] in ascending e from -0.0 (each step loads each row once)."""

    def step(e, *sums):
        a = [a_tile[at + e] for at in a_at]
        b = [b_tile[at + e] for at in b_at]
        return tuple(sums[i * len(b) + t] + a[i] * b[t] for i in range(len(a)) for t in range(len(b)))

    flat = B.loop(0, length, 1, tuple(_f32(-0.0) for _ in range(len(a_at) * len(b_at))), step)
    return [list(flat[i * len(b_at) : (i + 1) * len(b_at)]) for i in range(len(a_at))]


def _tile_sums(count: int, w_at: list, pairs: list) -> list[Value]:
    """For each (weights, values, pitch, cols) of ``pairs`` in turn, [i · len(cols) + a] =
    Σ_n weights[w_at[i] + n] · values[n · pitch + cols[a]] in ascending n from -0.0."""

    def step(n, *sums):
        out = []
        for w_tile, v_tile, pitch, cols in pairs:
            ws = [w_tile[at + n] for at in w_at]
            vs = [v_tile[n * _u32(pitch) + j] for j in cols]
            first = len(out)
            out += [sums[first + i * len(vs) + a] + ws[i] * vs[a] for i in range(len(ws)) for a in range(len(vs))]
        return tuple(out)

    total = sum(len(w_at) * len(cols) for *_, cols in pairs)
    return list(B.loop(0, count, 1, tuple(_f32(-0.0) for _ in range(total)), step))


def tiled_query_kernel(shape: AttentionShape) -> Kernel:
    """dQ of ``shape``, register-tiled: ``query_kernel``'s buffers, parameters and formulas, its sums over
    DQ_KEYS keys a block."""
    dt = shape.dtype
    L, S, E, Ev = shape.query_len, shape.key_len, shape.head_dim, shape.value_dim
    kb = B.KernelBuilder(f"attention_dq_tiled_{_batch_name(shape)}_{L}x{S}x{E}x{Ev}", (THREADS, 1, 1))
    bufs = _common(kb, shape)
    dq = kb.buffer("dq", T.float32, "write")
    scale = kb.param("scale", T.float32)
    dropout = Dropout(kb, shape) if shape.dropout else None
    q_tile = kb.shared("q_tile", T.float32, DQ_ROWS * E)
    g_tile = kb.shared("g_tile", T.float32, DQ_ROWS * Ev)
    k_tile = kb.shared("k_tile", T.float32, DQ_KEYS * (E + 1))  # padded: a group's lanes read distinct banks
    v_tile = kb.shared("v_tile", T.float32, DQ_KEYS * (Ev + 1))
    ds_tile = kb.shared("ds_tile", T.float32, DQ_ROWS * DQ_KEYS)
    grid = grid_of(shape, keys=False)
    row_blocks = -(-L // DQ_ROWS)
    with kb:
        lid = B.convert(B.local_id(0), T.uint32)
        g, c = lid >> _u32(LANES.bit_length() - 1), lid & _u32(LANES - 1)
        w = linear_workgroup(grid)
        with B.if_(w < _u32(shape.batch_count * row_blocks)):
            b = w / _u32(row_blocks)
            row0 = (w - b * _u32(row_blocks)) * _u32(DQ_ROWS)
            local_rows = [g * _u32(DQ_TILE_ROWS) + _u32(i) for i in range(DQ_TILE_ROWS)]
            rows = [row0 + r for r in local_rows]
            local_keys = [c + _u32(t * LANES) for t in range(DQ_TILE_KEYS)]
            operands = [shape.query, shape.key, shape.value]
            if bufs["mask"] is not None:
                operands.append(Operand(shape.mask_strides[:-2], (1,) * len(shape.batch)))
            offsets = _batch_offsets(b, shape, operands)
            mask_base = offsets[3] if bufs["mask"] is not None else None
            stage(q_tile, bufs["q"], dt, offsets[0], row0, L, E, E, DQ_ROWS)
            stage(g_tile, bufs["grad"], dt, b * _u32(L * Ev), row0, L, Ev, Ev, DQ_ROWS)
            rows_in = [b * _u32(L) + B.select(row < _u32(L), row, _u32(0)) for row in rows]
            lse_rows = [bufs["lse"][at] for at in rows_in]
            delta_rows = [bufs["delta"][at] for at in rows_in]
            end = key_blocks_end(shape, row0, DQ_ROWS, DQ_KEYS)
            cols = _columns(c, E)
            ds_at = [r * _u32(DQ_KEYS) for r in local_rows]

            def block(kb_i, *acc):
                key0 = kb_i * _u32(DQ_KEYS)
                B.barrier()
                stage(k_tile, bufs["k"], dt, offsets[1], key0, S, E, E + 1, DQ_KEYS)
                stage(v_tile, bufs["v"], dt, offsets[2], key0, S, Ev, Ev + 1, DQ_KEYS)
                B.barrier()
                dots = _tile_dots(
                    E, q_tile, [r * _u32(E) for r in local_rows], k_tile, [k * _u32(E + 1) for k in local_keys]
                )
                dps = _tile_dots(
                    Ev, g_tile, [r * _u32(Ev) for r in local_rows], v_tile, [k * _u32(Ev + 1) for k in local_keys]
                )
                for i in range(DQ_TILE_ROWS):
                    for t in range(DQ_TILE_KEYS):
                        key = key0 + local_keys[t]
                        s = masked_score(shape, dots[i][t], scale, rows[i], key, bufs["mask"], mask_base)
                        p = _weights(s, lse_rows[i])
                        dp = dps[i][t]
                        if dropout:  # the gradient reaches the weights the forward kept, scaled as they were
                            dp = dropout.apply(dropout.keep(b, rows[i], key), dp)
                        ds_tile[ds_at[i] + local_keys[t]] = p * (dp - delta_rows[i])
                B.barrier()
                sums = _tile_sums(DQ_KEYS, ds_at, [(ds_tile, k_tile, E + 1, cols)])
                return tuple(a + s_ for a, s_ in zip(acc, sums))

            acc = B.loop(_u32(0), end, _u32(1), tuple(_f32(0.0) for _ in range(DQ_TILE_ROWS * len(cols))), block)
            for i in range(DQ_TILE_ROWS):
                with B.if_(rows[i] < _u32(L)):
                    values = [a * scale for a in acc[i * len(cols) : (i + 1) * len(cols)]]
                    _store_columns(dq, (b * _u32(L) + rows[i]) * _u32(E), c, E, values)
    kernel = kb.finish()
    verify_kernel(kernel)
    return kernel


def tiled_key_kernel(shape: AttentionShape) -> Kernel:
    """dK and dV of ``shape``, register-tiled: ``key_kernel``'s buffers and formulas, its sums over DKV_QUERIES
    queries a block."""
    dt = shape.dtype
    L, S, E, Ev = shape.query_len, shape.key_len, shape.head_dim, shape.value_dim
    kb = B.KernelBuilder(f"attention_dkv_tiled_{_batch_name(shape)}_{L}x{S}x{E}x{Ev}", (THREADS, 1, 1))
    bufs = _common(kb, shape)
    dk = kb.buffer("dk", T.float32, "write")
    dv = kb.buffer("dv", T.float32, "write")
    scale = kb.param("scale", T.float32)
    dropout = Dropout(kb, shape) if shape.dropout else None
    k_tile = kb.shared("k_tile", T.float32, DKV_KEYS * E)
    v_tile = kb.shared("v_tile", T.float32, DKV_KEYS * Ev)
    q_tile = kb.shared("q_tile", T.float32, DKV_QUERIES * (E + 1))  # padded: a group's lanes read distinct banks
    g_tile = kb.shared("g_tile", T.float32, DKV_QUERIES * (Ev + 1))
    p_tile = kb.shared("p_tile", T.float32, DKV_KEYS * DKV_QUERIES)
    ds_tile = kb.shared("ds_tile", T.float32, DKV_KEYS * DKV_QUERIES)
    groups = groups_of(shape)
    key_blocks = -(-S // DKV_KEYS)
    grid = grid_of(shape, keys=True)
    with kb:
        lid = B.convert(B.local_id(0), T.uint32)
        g, c = lid >> _u32(LANES.bit_length() - 1), lid & _u32(LANES - 1)
        w = linear_workgroup(grid)
        with B.if_(w < _u32(key_batch_count(shape) * key_blocks)):
            bk = w / _u32(key_blocks)
            key0 = (w - bk * _u32(key_blocks)) * _u32(DKV_KEYS)
            local_keys = [g * _u32(DKV_TILE_KEYS) + _u32(i) for i in range(DKV_TILE_KEYS)]
            keys = [key0 + k for k in local_keys]
            local_queries = [c + _u32(t * LANES) for t in range(DKV_TILE_QUERIES)]
            first_query_batch = _first_query_batch(bk, shape, groups)
            kv_offsets = _batch_offsets(first_query_batch, shape, [shape.key, shape.value])
            stage(k_tile, bufs["k"], dt, kv_offsets[0], key0, S, E, E, DKV_KEYS)
            stage(v_tile, bufs["v"], dt, kv_offsets[1], key0, S, Ev, Ev, DKV_KEYS)
            dk_cols, dv_cols = _columns(c, E), _columns(c, Ev)
            pair_at = [k * _u32(DKV_QUERIES) for k in local_keys]
            query_blocks = -(-L // DKV_QUERIES)
            start = (key0 / _u32(DKV_QUERIES)) if shape.causal else _u32(0)  # earlier queries see none of these keys

            def head(h, *acc):
                bq = first_query_batch + h
                mask_base, q_base = _query_head_bases(bq, shape, bufs["mask"])

                def block(qb, *acc):
                    query0 = qb * _u32(DKV_QUERIES)
                    B.barrier()
                    stage(q_tile, bufs["q"], dt, q_base, query0, L, E, E + 1, DKV_QUERIES)
                    stage(g_tile, bufs["grad"], dt, bq * _u32(L * Ev), query0, L, Ev, Ev + 1, DKV_QUERIES)
                    B.barrier()
                    # q·k and dO·v: the products commute exactly, so the key may be the left factor
                    dots = _tile_dots(
                        E, k_tile, [k * _u32(E) for k in local_keys], q_tile, [q * _u32(E + 1) for q in local_queries]
                    )
                    dps = _tile_dots(
                        Ev,
                        v_tile,
                        [k * _u32(Ev) for k in local_keys],
                        g_tile,
                        [q * _u32(Ev + 1) for q in local_queries],
                    )
                    for t in range(DKV_TILE_QUERIES):
                        query = query0 + local_queries[t]
                        at = bq * _u32(L) + B.select(query < _u32(L), query, _u32(0))
                        lse_q, delta_q = bufs["lse"][at], bufs["delta"][at]
                        for i in range(DKV_TILE_KEYS):
                            s = masked_score(shape, dots[i][t], scale, query, keys[i], bufs["mask"], mask_base)
                            p, dp = _weights(s, lse_q), dps[i][t]
                            kept = p
                            if dropout:  # dV takes the kept weights; dS the kept part of dP, scaled as in the forward
                                keep = dropout.keep(bq, query, keys[i])
                                kept, dp = dropout.apply(keep, p), dropout.apply(keep, dp)
                            p_tile[pair_at[i] + local_queries[t]] = kept
                            ds_tile[pair_at[i] + local_queries[t]] = p * (dp - delta_q)
                    B.barrier()
                    pairs = [(ds_tile, q_tile, E + 1, dk_cols), (p_tile, g_tile, Ev + 1, dv_cols)]
                    sums = _tile_sums(DKV_QUERIES, pair_at, pairs)
                    return tuple(a + s_ for a, s_ in zip(acc, sums))

                return B.loop(start, _u32(query_blocks), _u32(1), acc, block)

            n_dk, n_dv = DKV_TILE_KEYS * len(dk_cols), DKV_TILE_KEYS * len(dv_cols)
            acc = B.loop(_u32(0), _u32(groups), _u32(1), tuple(_f32(0.0) for _ in range(n_dk + n_dv)), head)
            for i in range(DKV_TILE_KEYS):
                with B.if_(keys[i] < _u32(S)):
                    dk_values = [a * scale for a in acc[i * len(dk_cols) : (i + 1) * len(dk_cols)]]
                    dv_values = acc[n_dk + i * len(dv_cols) : n_dk + (i + 1) * len(dv_cols)]
                    _store_columns(dk, (bk * _u32(S) + keys[i]) * _u32(E), c, E, dk_values)
                    _store_columns(dv, (bk * _u32(S) + keys[i]) * _u32(Ev), c, Ev, dv_values)
    kernel = kb.finish()
    verify_kernel(kernel)
    return kernel
