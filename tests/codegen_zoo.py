"""Kernels that together use every IR instruction on every operand type it accepts.

Shared by test_codegen.py (emit, assemble, validate) and test_codegen_parity.py (run on the CPU
interpreter and on Vulkan, compare bits). Each builder returns a finished ``Kernel``.
"""

from __future__ import annotations

from dataclasses import dataclass

from vkml.ir import types as T
from vkml.ir.builder import (
    KernelBuilder,
    barrier,
    const,
    emit,
    eq,
    global_id,
    if_,
    if_else,
    local_id,
    loop,
    matrix_add,
    matrix_convert,
    matrix_fill,
    matrix_map,
    matrix_mul,
    matrix_mul_add,
    matrix_reduce_rows,
    matrix_scale,
    matrix_sub,
    num_workgroups,
    range_,
    select,
    shuffle_xor,
    subgroup_barrier,
    subgroup_id,
    workgroup_id,
)
from vkml.ir.core import Instr, Kernel, walk
from vkml.ir.instructions import CONVERSIONS, FLOATS, INTS, SPECS, check_bitcast, result_type

ALL_TYPES = T.ALL
_SPECIAL_OPERANDS = ("select", "shl", "shr", "bitcast", "convert")


@dataclass(frozen=True)
class PureCase:
    """One pure instruction on one combination of operand types."""

    op: str
    arg_types: tuple[T.DType, ...]
    attrs: tuple = ()

    @property
    def result(self) -> T.DType:
        return result_type(self.op, self.arg_types, self.attrs)

    @property
    def name(self) -> str:
        target = f"_to_{self.attrs[0]}" if self.op in ("bitcast", "convert") else ""
        return f"{self.op}_{'_'.join(t.short for t in self.arg_types)}{target}"


def pure_cases() -> list[PureCase]:
    """Every pure instruction with every operand type (and conversion pair) the IR allows."""
    cases = []
    for op, spec in SPECS.items():
        if spec.kind != "pure" or op in _SPECIAL_OPERANDS:
            continue
        cases += [PureCase(op, (t,) * spec.nargs) for t in spec.operand_types]
    cases += [PureCase("select", (T.bool_, t, t)) for t in ALL_TYPES]
    for op in ("shl", "shr"):
        cases += [PureCase(op, (t, t)) for t in INTS]
        cases += [PureCase(op, (T.int64, T.uint32)), PureCase(op, (T.uint32, T.int32))]  # count of another type
    for src in SPECS["bitcast"].operand_types:
        for dst in ALL_TYPES:
            try:
                check_bitcast(src, dst)
            except Exception:
                continue
            cases.append(PureCase("bitcast", (src,), (dst.name,)))
    pairs = sorted(CONVERSIONS, key=lambda p: (p[0].name, p[1].name))
    cases += [PureCase("convert", (src,), (dst.name,)) for src, dst in pairs]
    return cases


def pure_kernel(case: PureCase, local_size: int = 64) -> Kernel:
    """``out[i] = op(a0[i], a1[i], ...)`` for ``i < n``."""
    kb = KernelBuilder(case.name, local_size=(local_size, 1, 1))
    inputs = [kb.buffer(f"a{j}", t, "read") for j, t in enumerate(case.arg_types)]
    out = kb.buffer("out", case.result, "write")
    n = kb.param("n", T.uint32)
    with kb:
        i = global_id(0)
        with if_(i < n):
            out[i] = emit(case.op, *(buf[i] for buf in inputs), attrs=case.attrs)
    return kb.finish()


def index_kernel(local_size=(4, 2, 2)) -> Kernel:
    """Writes every index builtin on every axis: 12 words per invocation, by linear invocation id."""
    kb = KernelBuilder("index_space", local_size=local_size)
    out = kb.buffer("out", T.uint32, "write")
    with kb:
        sx, sy, _ = local_size
        gx = global_id(0) + num_workgroups(0) * sx * (global_id(1) + num_workgroups(1) * sy * global_id(2))
        for k, fn in enumerate((global_id, local_id, workgroup_id, num_workgroups)):
            for axis in range(3):
                out[gx * 12 + (3 * k + axis)] = fn(axis)
    return kb.finish()


def shuffle_kernel(dtype: T.DType, xor_mask: int, local_size: int = 64) -> Kernel:
    """``out[i] = shuffle_xor(x[i], mask)``; every invocation active (uniform control flow)."""
    kb = KernelBuilder(f"shuffle_{dtype.short}_{xor_mask}", local_size=(local_size, 1, 1))
    x = kb.buffer("x", dtype, "read")
    out = kb.buffer("out", dtype, "write")
    with kb:
        i = global_id(0)
        out[i] = shuffle_xor(x[i], xor_mask)
    return kb.finish()


def reduction_kernel(dtype: T.DType = T.float32, local_size: int = 64) -> Kernel:
    """A workgroup tree sum through shared memory and barriers: pairs (2j, 2j+1) level by level."""
    kb = KernelBuilder(f"tree_sum_{dtype.short}", local_size=(local_size, 1, 1))
    x = kb.buffer("x", dtype, "read")
    out = kb.buffer("out", dtype, "write")
    scratch = kb.shared("scratch", dtype, local_size)
    with kb:
        lid = local_id(0)
        scratch[lid] = x[global_id(0)]
        barrier()
        width = 1
        while width < local_size:
            with if_(_is_multiple(lid, 2 * width)):
                scratch[lid] = scratch[lid] + scratch[lid + width]
            barrier()
            width *= 2
        with if_(_is_multiple(lid, local_size)):
            out[workgroup_id(0)] = scratch[lid]
    return kb.finish()


def shared_roundtrip_kernel(dtype: T.DType, local_size: int = 64, sync=barrier) -> Kernel:
    """Through shared memory and a barrier to the neighbour: ``out[g] = x[g ^ 1]`` within a workgroup.

    ``sync``: ``barrier``, or ``subgroup_barrier`` (the neighbour is in the same subgroup: subgroups have
    an even number of invocations)."""
    kb = KernelBuilder(f"shared_swap_{dtype.short}_{sync.__name__}", local_size=(local_size, 1, 1))
    x = kb.buffer("x", dtype, "read")
    out = kb.buffer("out", dtype, "write")
    scratch = kb.shared("scratch", dtype, local_size)
    with kb:
        lid = local_id(0)
        scratch[lid] = x[global_id(0)]
        sync()
        out[global_id(0)] = scratch[lid ^ 1]
    return kb.finish()


def shared_vector_kernel(dtype: T.DType, local_size: int = 16) -> Kernel:
    """Groups of four into shared memory as vectors (``shared_vstore``), read back element by element from the
    neighbour, reversed: ``out[4g + j] = x[4(g ^ 1) + 3 - j]`` within a workgroup."""
    kb = KernelBuilder(f"shared_vector_{dtype.short}", local_size=(local_size, 1, 1))
    x = kb.buffer("x", dtype, "read")
    out = kb.buffer("out", dtype, "write")
    scratch = kb.shared("scratch", dtype, 4 * local_size)
    with kb:
        lid, g = local_id(0), global_id(0)
        scratch.store4(lid, tuple(x[g * 4 + j] for j in range(4)))
        barrier()
        for j in range(4):
            out[g * 4 + j] = scratch[(lid ^ 1) * 4 + (3 - j)]
    return kb.finish()


def vector_kernel(dtype: T.DType, local_size: int = 16) -> Kernel:
    """Aligned groups of four, reversed: ``out`` group g = x's group g backwards (vload / vstore)."""
    kb = KernelBuilder(f"vector_reverse_{dtype.short}", local_size=(local_size, 1, 1))
    x = kb.buffer("x", dtype, "read")
    out = kb.buffer("out", dtype, "write")
    with kb:
        g = global_id(0)
        out.store4(g, x.load4(g)[::-1])
    return kb.finish()


def _is_multiple(v, m: int):
    return eq(v & (m - 1), 0)


def control_flow_kernel() -> Kernel:
    """Nested ifs and loops with results: a loop inside an if-else inside a loop, carrying two values."""
    kb = KernelBuilder("nested_control", local_size=(16, 1, 1))
    x = kb.buffer("x", T.int32, "read")
    out = kb.buffer("out", T.int32, "write")
    flags = kb.buffer("flags", T.bool_, "readwrite")
    n = kb.param("n", T.uint32)
    with kb:
        i = global_id(0)
        with if_(i < n):
            v = x[i]

            def outer(j, acc, count):
                def odd():
                    (inner,) = loop(0, j, 1, (acc,), lambda k, a: a + k * v)
                    return inner, count + 1

                def even():
                    return select(v < 0, acc - j, acc + j), count

                return if_else(eq(j & 1, 1), odd, even)

            acc, count = loop(const(0, T.int32), 5, 1, (v, const(0, T.int32)), outer)
            (clamped,) = if_else(acc > 1000, lambda: const(1000, T.int32), lambda: acc)
            out[i] = clamped + count
            flags[i] = ~flags[i] | (count > 1)
    return kb.finish()


MATRIX_A = T.matrix_type(T.float16, 16, 16, "a")
MATRIX_B = T.matrix_type(T.float16, 16, 16, "b")
MATRIX_ACC = T.matrix_type(T.float32, 16, 16, "acc")


def matrix_kernel(subgroup_size: int = 32) -> Kernel:
    """Per workgroup, two subgroups each compute one 16×16 block ``A_s · B_s`` (A_s 16×(16·steps) row-major,
    B_s (16·steps)×16 row-major, both staged in shared memory) into ``out`` as float32. ``steps`` (≤ 2)
    runs the K loop with the accumulator carried; ``steps == 0`` gives the +0.0 matrix of an ``if_else``.

    Buffers per workgroup: 1024 halves of a and of b (subgroup s's block at 512·s), 512 floats of out.
    """
    local = 2 * subgroup_size
    kb = KernelBuilder("matrix", local_size=(local, 1, 1), subgroup_size=subgroup_size)
    a, b = kb.buffer("a", T.float16, "read"), kb.buffer("b", T.float16, "read")
    out = kb.buffer("out", T.float32, "write")
    steps = kb.param("steps", T.uint32)
    a_tile, b_tile = kb.shared("a_tile", T.float16, 1024), kb.shared("b_tile", T.float16, 1024)
    c_tile = kb.shared("c_tile", T.float32, 512)
    with kb:
        lid, wg = local_id(0), workgroup_id(0)
        with range_(0, 1024 // local) as r:
            e = r * local + lid
            a_tile[e], b_tile[e] = a[wg * 1024 + e], b[wg * 1024 + e]
        barrier()
        base = subgroup_id() * 512

        def step(k, acc):
            a_m = a_tile.load_matrix(base + k * 16, MATRIX_A, 32)
            b_m = b_tile.load_matrix(base + k * 256, MATRIX_B, 16)
            return matrix_mul_add(a_m, b_m, acc)

        (acc,) = loop(const(0, T.uint32), steps, 1, (matrix_fill(-0.0, MATRIX_ACC),), step)
        (acc,) = if_else(steps > 0, lambda: acc, lambda: matrix_fill(0.0, MATRIX_ACC))
        c_tile.store_matrix(subgroup_id() * 256, acc, 16)
        barrier()
        with range_(0, 512 // local) as r:
            e = r * local + lid
            out[wg * 512 + e] = c_tile[e]
    return kb.finish()


def tensor_matrix_kernel() -> Kernel:
    """Workgroup-scope matrices (VK_NV_cooperative_matrix2): per workgroup, the 32×32 block of a (40×16) @ b (16×20)
    at rows 32·w, loaded and stored through 2-D tensor views that clamp at the edges, into f16 ``c``."""
    kb = KernelBuilder("tensor_matrix", local_size=(128, 1, 1), subgroup_size=32)
    a, b, c = kb.buffer("a", T.float16, "read"), kb.buffer("b", T.float16, "read"), kb.buffer("c", T.float16, "write")
    with kb:
        row0 = workgroup_id(0) * 32
        a_m = a.load_matrix((row0, 0), T.matrix_type(T.float16, 32, 16, "a", "workgroup"), (40, 16))
        b_m = b.load_matrix((0, 0), T.matrix_type(T.float16, 16, 32, "b", "workgroup"), (16, 20))
        acc = matrix_fill(-0.0, T.matrix_type(T.float32, 32, 32, "acc", "workgroup"))
        c.store_matrix((row0, 0), matrix_mul_add(a_m, b_m, acc), (40, 20))
    return kb.finish()


def flash_matrix_kernel() -> Kernel:
    """The flash-attention forward's workgroup-scope instructions (vkml/kernels/attention_cm2.py): per workgroup,
    scores of 32 rows of ``q`` against 32 of ``k`` (loaded transposed), row max and sum, a masking map, element-wise
    arithmetic, the f16 conversion and a product, stored clipped to ``n`` rows."""
    kb = KernelBuilder("flash_matrix", local_size=(128, 1, 1), subgroup_size=32)
    q, k = kb.buffer("q", T.float16, "read"), kb.buffer("k", T.float16, "read")
    out = kb.buffer("out", T.float32, "write")
    n = kb.param("n", T.uint32)
    scale = kb.param("scale", T.float32)

    def wg(elem, rows, cols, use):
        return T.matrix_type(elem, rows, cols, use, "workgroup")

    with kb:
        row0 = workgroup_id(0) * 32
        q_m = q.load_matrix((row0, 0), wg(T.float16, 32, 16, "a"), (64, 16))
        kt = k.load_matrix((row0, 0), wg(T.float16, 16, 32, "b"), (64, 16), transposed=True)
        s = matrix_scale(matrix_mul_add(q_m, kt, matrix_fill(-0.0, wg(T.float32, 32, 32, "acc"))), scale)
        top = matrix_reduce_rows(s, "max", 32)
        masked = matrix_map(lambda r, c, x, t, first: select(c > r + first, x - t, x), s, top, row0)
        mixed = matrix_add(matrix_mul(masked, top), matrix_sub(masked, s))
        total = matrix_reduce_rows(mixed, "add", 16)
        k_m = k.load_matrix((row0, 0), wg(T.float16, 32, 16, "b"), (64, 16))
        product = matrix_mul_add(matrix_convert(mixed, wg(T.float16, 32, 32, "a")), k_m, total)
        out.store_matrix((row0, 0), product, (64, 16), rows_kept=n)
    return kb.finish()


def kernels_for_coverage() -> list[Kernel]:
    """One kernel per pure case plus the non-pure kinds: together they use every instruction."""
    kernels = [pure_kernel(c) for c in pure_cases()]
    kernels.append(index_kernel())
    kernels += [shuffle_kernel(t, 1) for t in ALL_TYPES]
    kernels += [reduction_kernel(t) for t in (T.float32, T.float16, T.int64)]
    kernels += [shared_roundtrip_kernel(t) for t in ALL_TYPES]
    kernels.append(shared_roundtrip_kernel(T.uint32, sync=subgroup_barrier))
    kernels += [vector_kernel(t) for t in ALL_TYPES]
    kernels += [shared_vector_kernel(t) for t in ALL_TYPES]
    kernels.append(control_flow_kernel())
    return kernels


def ops_used(kernels: list[Kernel]) -> set[str]:
    return {s.op for k in kernels for s in walk(k.body) if isinstance(s, Instr)}


__all__ = [
    "FLOATS",
    "PureCase",
    "control_flow_kernel",
    "flash_matrix_kernel",
    "index_kernel",
    "kernels_for_coverage",
    "matrix_kernel",
    "ops_used",
    "pure_cases",
    "pure_kernel",
    "reduction_kernel",
    "shared_roundtrip_kernel",
    "shared_vector_kernel",
    "shuffle_kernel",
    "vector_kernel",
]
