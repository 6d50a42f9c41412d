"""Cooperative matrices in the CPU interpreter (see ``interp`` for the rest of the semantics).

A matrix value belongs to a whole subgroup: the interpreter keeps one ``rows × cols`` array
per subgroup of the chunk, shape ``(subgroups, rows, cols)`` (or ``(1, rows, cols)`` when it
is the same everywhere, as a constant fill is). Subgroup ``s`` of a chunk holds the
invocations of local linear index ``[s·S, (s+1)·S)`` of workgroup ``s // (group_size / S)``,
``S`` being the kernel's ``subgroup_size``. Semantics fixed here:

- A matrix instruction runs for every subgroup whose invocations are active, and raises
  ``IRError`` when a subgroup is split (some invocations active, some not) or when an operand
  (index, fill value) differs between the active invocations of one subgroup.
- ``cm_shared_load arr[i], stride, row`` gives element (r, c) = ``arr[i + r·stride + c]``;
  ``col``: ``arr[i + c·stride + r]``. An element out of range raises ``IndexError``.
- ``cm_shared_store`` writes the elements the same way; where two active subgroups write one
  address, the higher subgroup wins.
- A workgroup-scope matrix (``MatrixType.scope``) is one value per workgroup of the chunk, shape
  ``(workgroups, rows, cols)``; the rules above hold with "workgroup" for "subgroup".
- ``cm_tensor_load buf[row0], col0, R, C, edge`` reads ``buf`` as an R×C row-major tensor: element
  (r, c) of the result is ``buf[(row0 + r)·C + col0 + c]``, or +0.0 where row0 + r ≥ R or
  col0 + c ≥ C with edge ``clamp`` (``inside``: such an element raises ``IndexError``, as an
  element past the buffer does). ``cm_tensor_store`` writes the elements inside (``clamp``: drops
  the others), converting f32 to f16 round-to-nearest-even (numpy's ``astype``); where two
  active groups write one address, the higher group wins.
- ``cm_mul_add a, b, c`` computes, for each (i, j): ``acc = c[i, j]``, then for k = 0, 1, ...,
  K-1 ``acc = fl32(acc + a[i, k]·b[k, j])``. The float16 products are exact in float32 (11-bit
  significands, exponents far inside float32's range), so only the K additions round, in
  ascending k: the order of vkml's scalar matmul. A device may sum a block of products in
  another order and precision (docs/ops/matmul.md states the bound).
- The workgroup-scope instructions of the flash-attention forward (VK_NV_cooperative_matrix2):
  ``cm_tensor_load_transposed`` gives element (r, c) = the tensor's (row0 + c, col0 + r), clamped as
  ``cm_tensor_load``; ``cm_tensor_store_rows`` stores as ``cm_tensor_store`` but drops rows r ≥ kept.
  ``cm_reduce_rows`` combines each row's columns in one fixed order, the contract's reduction tree
  (DESIGN §4): columns 2j and 2j+1 are combined level by level, an odd last column carried up
  unchanged; ``add`` rounds each sum to f32; ``max`` takes a where a > b or a is NaN, else b. Every
  column of the result holds the row's value. (A device reduces in its own order: its sums may differ
  in the last bits, which the attention page's bound covers.) ``cm_add``/``cm_sub``/``cm_mul``/
  ``cm_scale`` are numpy's f32 operations per element; ``cm_convert`` rounds to f16 to nearest even
  (numpy's ``astype``). ``cm_map`` evaluates its function on every element at once: each element's
  value depends on its own (row, column, elements, operands) alone, so this is the same as calling it
  row by row and column by column.
"""

from __future__ import annotations

import numpy as np

from ...errors import IRError
from .. import types as T
from ..core import If, Instr
from ..instructions import MATRIX_ELEMENTWISE, MATRIX_TENSOR_LOADS, MATRIX_TENSOR_OPS, SPECS
from .memory import last_write_per_address


class Subgroups:
    """The subgroup view of one chunk of lanes: ``count`` subgroups of ``size`` lanes each (``size``:
    the kernel's subgroup size, or the workgroup's for workgroup-scope matrices)."""

    def __init__(self, kernel, lanes: int, group_size: int, size: int | None = None):
        self.kernel = kernel
        self.size = size or kernel.subgroup_size
        self.count = lanes // self.size if self.size else 0
        self.per_group = group_size // self.size if self.size else 0

    def mask(self, mask) -> np.ndarray | None:
        """Which subgroups run under the lane ``mask`` (None: all); a split subgroup raises IRError."""
        if mask is None:
            return None
        per = mask.reshape(self.count, self.size)
        split = per.any(axis=1) & ~per.all(axis=1)
        if split.any():
            raise IRError(
                f"kernel {self.kernel.name!r}: a matrix instruction runs in only part of subgroup "
                f"{int(np.argmax(split))} of the chunk; matrices need subgroup-uniform control flow"
            )
        return per[:, 0]

    def operand(self, value: np.ndarray, active: np.ndarray | None, what: str) -> np.ndarray:
        """A scalar operand per subgroup (shape (count,) or (1,)); raise if a subgroup's active lanes disagree."""
        if value.shape[0] == 1:
            return value
        per = value.reshape(self.count, self.size)
        differs = (per != per[:, :1]).any(axis=1)
        if active is not None:
            differs &= active
        if differs.any():
            raise IRError(
                f"kernel {self.kernel.name!r}: the {what} of a matrix instruction differs within subgroup "
                f"{int(np.argmax(differs))} of the chunk; it must be the same in the whole subgroup"
            )
        return per[:, 0]

    def by_condition(self, cond: np.ndarray) -> np.ndarray:
        """A lane condition (uniform per subgroup, as the verifier ensures) as one bool per subgroup."""
        return cond if cond.shape[0] == 1 else cond.reshape(self.count, self.size)[:, 0]


def holders(chunk, mtype: T.MatrixType) -> Subgroups:
    """The groups of lanes that hold one value of ``mtype`` each: the chunk's subgroups or workgroups."""
    return chunk.workgroups if mtype.scope == "workgroup" else chunk.subgroups


def merge(subgroups: Subgroups, mask, new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """``new`` for the subgroups of lane ``mask`` (a bool per lane or None: all), ``old`` elsewhere."""
    if mask is None:
        return new
    return np.where(subgroups.by_condition(mask)[:, None, None], new, old)


def execute(chunk, instr: Instr, args: list[np.ndarray], mask) -> np.ndarray | None:
    """Run matrix instruction ``instr`` of ``chunk`` (an ``interp._Chunk``); return its value, if any."""
    mtype = (
        instr.result.dtype if instr.result is not None else next(a.dtype for a in instr.args if T.is_matrix(a.dtype))
    )
    subgroups = holders(chunk, mtype if instr.op != "cm_mul_add" else instr.args[2].dtype)
    active = subgroups.mask(mask)
    if instr.op in MATRIX_TENSOR_OPS:
        return _tensor(chunk, instr, args, subgroups, active)
    if instr.op == "cm_reduce_rows":
        return reduce_rows(args[0], instr.attrs[0], instr.result.dtype.cols)
    if instr.op == "cm_scale":
        return args[0] * subgroups.operand(args[1], active, "scale")[:, None, None]
    if instr.op in MATRIX_ELEMENTWISE:
        return MATRIX_ELEMENTWISE[instr.op](args[0], args[1])
    if instr.op == "cm_convert":
        return args[0].astype(instr.result.dtype.elem.np)
    if instr.op == "cm_map":
        return element_map(instr, args, subgroups, active)
    if instr.op == "cm_fill":
        mtype = instr.result.dtype
        value = subgroups.operand(args[0], active, "fill value")
        return np.broadcast_to(value[:, None, None], (value.shape[0], mtype.rows, mtype.cols)).astype(mtype.elem.np)
    if instr.op == "cm_mul_add":
        return mul_add(*args)
    name, stride, layout = instr.attrs
    index = subgroups.operand(args[0], active, "index")
    mtype = instr.result.dtype if instr.op == "cm_shared_load" else instr.args[1].dtype
    flat = _positions(chunk, name, index, active, mtype, stride, layout)
    shared = chunk.memory.shared[name]
    if instr.op == "cm_shared_load":
        return shared[flat]
    value = np.broadcast_to(args[1], flat.shape)
    if active is not None:
        flat, value = flat[active], value[active]
    flat, value = last_write_per_address(flat.reshape(-1), value.reshape(-1))
    shared[flat] = value
    return None


def mul_add(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a·b + c`` per subgroup in the stated order: exact products, float32 sums in ascending k."""
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    count = max(a.shape[0], b.shape[0], c.shape[0])
    acc = np.array(np.broadcast_to(c, (count, *c.shape[1:])), dtype=np.float32)
    for k in range(a.shape[2]):
        acc = acc + a32[:, :, k, None] * b32[:, None, k, :]
    return acc


def reduce_rows(matrix: np.ndarray, combine: str, cols: int) -> np.ndarray:
    """``cm_reduce_rows``: each row's columns combined in the contract's tree, the value in ``cols`` columns."""
    x = matrix
    while x.shape[2] > 1:
        pairs = x.shape[2] // 2
        left, right = x[:, :, 0 : 2 * pairs : 2], x[:, :, 1 : 2 * pairs : 2]
        combined = left + right if combine == "add" else np.where((left > right) | np.isnan(left), left, right)
        x = np.concatenate([combined, x[:, :, 2 * pairs :]], axis=2)  # an odd last column goes up unchanged
    return np.ascontiguousarray(np.broadcast_to(x, (x.shape[0], x.shape[1], cols)))


def element_map(instr: Instr, args: list[np.ndarray], groups: Subgroups, active) -> np.ndarray:
    """``cm_map``: the function's instructions evaluated on every (group, row, column) at once."""
    fn, mtype = instr.attrs[0], instr.result.dtype
    given = [
        value if T.is_matrix(operand.dtype) else groups.operand(value, active, "operand")[:, None, None]
        for operand, value in zip(instr.args, args)
    ]
    rows = np.arange(mtype.rows, dtype=np.uint32)[None, :, None]
    cols = np.arange(mtype.cols, dtype=np.uint32)[None, None, :]
    values = {id(p): v for p, v in zip(fn.params, (rows, cols, *given))}
    with np.errstate(all="ignore"):
        (out,) = _function_block(fn.body, values)
    count = max(v.shape[0] for v in given)
    return np.ascontiguousarray(np.broadcast_to(out, (count, mtype.rows, mtype.cols)), dtype=mtype.elem.np)


def _function_block(block, values: dict) -> list[np.ndarray]:
    """Evaluate a ``cm_map`` function's block on arrays of elements; return its yields. Both branches of an
    ``if`` are evaluated and each element takes its own (the function is pure: nothing else can differ)."""
    for stmt in block.body:
        if isinstance(stmt, If):
            cond = values[id(stmt.cond)]
            then, orelse = _function_block(stmt.then, values), _function_block(stmt.orelse, values)
            for result, a, b in zip(stmt.results, then, orelse):
                values[id(result)] = np.where(cond, a, b)
        elif stmt.op == "const":
            values[id(stmt.result)] = np.array([stmt.attrs[0]], dtype=stmt.result.dtype.np).reshape(1, 1, 1)
        else:
            extra = (T.by_name(stmt.attrs[0]),) if stmt.op in ("bitcast", "convert") else ()
            values[id(stmt.result)] = SPECS[stmt.op].np_fn(*(values[id(a)] for a in stmt.args), *extra)
    return [values[id(y)] for y in block.yields]


def _tensor(chunk, instr: Instr, args: list[np.ndarray], groups: Subgroups, active) -> np.ndarray | None:
    """``cm_tensor_load`` / ``cm_tensor_store`` (and their transposed, row-clipped forms) for every active group."""
    name, rows_total, cols_total, edge = instr.attrs
    load = instr.op in MATRIX_TENSOR_LOADS
    mtype = instr.result.dtype if load else instr.args[2].dtype
    row0 = groups.operand(args[0], active, "row").astype(np.int64)
    col0 = groups.operand(args[1], active, "column").astype(np.int64)
    count = groups.count
    down, across = np.arange(mtype.rows)[:, None], np.arange(mtype.cols)[None, :]
    if instr.op == "cm_tensor_load_transposed":  # element (r, c) is the tensor's (row0 + c, col0 + r)
        down, across = across, down
    rows = np.broadcast_to(row0, (count,))[:, None, None] + down
    cols = np.broadcast_to(col0, (count,))[:, None, None] + across
    inside = (rows < rows_total) & (cols < cols_total)
    if instr.op == "cm_tensor_store_rows":
        kept = groups.operand(args[3], active, "rows kept").astype(np.int64)
        inside = inside & (np.arange(mtype.rows)[None, :, None] < np.broadcast_to(kept, (count,))[:, None, None])
    if active is not None:
        inside &= active[:, None, None]
    buffer = chunk.memory.buffers[name]
    flat = np.where(inside, rows * cols_total + cols, 0)
    outside = active if active is not None else np.ones(count, dtype=bool)
    if edge == "inside" and (~inside & outside[:, None, None]).any():
        raise IndexError(
            f"kernel {chunk.kernel.name!r}: {instr.op} of a {mtype.short} at rows/columns past the "
            f"{rows_total}x{cols_total} tensor {name!r}, with edge 'inside'"
        )
    if flat.max(initial=0) >= buffer.shape[0]:
        raise IndexError(
            f"kernel {chunk.kernel.name!r}: {instr.op} reaches past the {buffer.shape[0]} elements "
            f"of buffer {name!r} ({rows_total}x{cols_total} tensor)"
        )
    if load:
        return np.where(inside, buffer[flat], mtype.elem.np.type(0))
    value = np.broadcast_to(args[2], inside.shape).astype(buffer.dtype)  # f32 -> f16 rounds to nearest even
    flat, value = last_write_per_address(flat[inside], value[inside])
    buffer[flat] = value
    return None


def _positions(chunk, name: str, index: np.ndarray, active, mtype: T.MatrixType, stride: int, layout: str):
    """Flat positions in the chunk's copy of shared array ``name`` of every element, shape (subgroups, rows, cols)."""
    rows, cols = np.arange(mtype.rows)[:, None], np.arange(mtype.cols)[None, :]
    offsets = rows * stride + cols if layout == "row" else cols * stride + rows
    subgroups = chunk.subgroups
    at = np.broadcast_to(index.astype(np.int64), (subgroups.count,))[:, None, None] + offsets
    if active is not None:
        at = np.where(active[:, None, None], at, 0)
    size = chunk.kernel.shared_array(name).size
    bad = (at < 0) | (at >= size)
    if bad.any():
        s = int(np.argmax(bad.any(axis=(1, 2))))
        raise IndexError(
            f"kernel {chunk.kernel.name!r}: {mtype.short} at {name}[{int(at[s, 0, 0])}] with stride {stride} "
            f"({layout}) reaches past the shared array's {size} elements (subgroup {s} of the chunk)"
        )
    group_in_chunk = np.arange(subgroups.count) // subgroups.per_group
    return at + (group_in_chunk * size)[:, None, None]
