"""The IR's instruction set: one table, the single source of truth.

Every instruction here is *exact*: its result is defined bit for bit by the Vulkan spec
(under RoundingModeRTE, SignedZeroInfNanPreserve and NoContraction) and numpy computes the
same bits. Everything else (division, sqrt, exp, ...) is built from these in the DSL.
The one named exception is ``mul_add``, for matmul's accumulation on GPUs that fuse it: the
CPU rounds twice, a device may round once (docs/ops/matmul.md).

Each ``Spec`` gives the operand rule, the result type and the numpy semantics the CPU
interpreter executes; codegen maps the same names to SPIR-V. ``check`` raises ``IRError``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import IRError
from . import types as T

FLOATS = (T.float32, T.float16, T.float64)
INTS = (T.int32, T.uint32, T.int64)
NUMBERS = FLOATS + INTS
BITS = INTS + (T.bool_,)
# Types of buffer elements only (uint8, int8, int16; bfloat16 is held as int16): loaded, they are
# converted to a wide integer and computed there (vkml/ops/cast.py); only `convert` takes them.
STORAGE_INTS = (T.uint8, T.int8, T.int16, T.uint16)


@dataclass(frozen=True)
class Spec:
    name: str
    kind: str  # "pure" | "memory" | "index" | "sync" | "subgroup" | "const"
    nargs: int
    operand_types: tuple  # allowed dtypes of the first operand (others follow the rule)
    result: Callable  # (arg dtypes, attrs) -> result DType | None
    np_fn: Callable | None = None  # numpy semantics for "pure" instructions
    doc: str = ""


def _same(ts, attrs):
    return ts[0]


def _boolean(ts, attrs):
    return T.bool_


def _trunc_div(a, b):
    # SPIR-V OpSDiv rounds toward zero; numpy's // floors.
    q = a // np.where(b == 0, 1, b)
    fix = (q * b != a) & ((a < 0) != (b < 0))
    return (q + fix).astype(a.dtype)


def _trunc_rem(a, b):
    return (a - _trunc_div(a, b) * b).astype(a.dtype)


def _uint_of(dt):
    return {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dt).itemsize]


def _neg(a):
    if a.dtype.kind == "f":  # flip the sign bit, NaN payload untouched (OpFNegate)
        u = _uint_of(a.dtype)
        return (a.view(u) ^ u(1 << (8 * a.dtype.itemsize - 1))).view(a.dtype)
    return np.negative(a)


def _shift_count(b, a):
    return (b & (8 * a.dtype.itemsize - 1)).astype(a.dtype, copy=False)  # the and made a fresh array: no second copy


def _shl(a, b):
    return np.left_shift(a, _shift_count(b, a))


def _shr(a, b):
    return np.right_shift(a, _shift_count(b, a))  # arithmetic for signed, logical for unsigned


def _convert(a, out: T.DType):
    return a.astype(out.np)


def _f16_from_bits(a):
    return (a & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16)


def _f16_to_bits(a):
    return a.view(np.uint16).astype(np.uint32)


_TABLE: list[Spec] = [
    # arithmetic
    Spec("add", "pure", 2, NUMBERS, _same, np.add, "a + b (float: correctly rounded)"),
    Spec("sub", "pure", 2, NUMBERS, _same, np.subtract, "a - b"),
    Spec("mul", "pure", 2, NUMBERS, _same, np.multiply, "a * b"),
    Spec("neg", "pure", 1, NUMBERS, _same, _neg, "-a (float: flips the sign bit)"),
    Spec(
        "mul_add",
        "pure",
        3,
        (T.float32,),
        _same,
        lambda a, b, c: a * b + c,
        "a * b + c; the CPU rounds the product and the sum, Vulkan emits a fused multiply-add that a device "
        "may round once and may flush subnormal operands (NVIDIA's does) — not exact: only matmul's "
        "accumulation uses it, on large GPUs for large products (VKML_MATMUL_FMA, docs/ops/matmul.md)",
    ),
    Spec("idiv", "pure", 2, INTS, _same, _trunc_div, "integer a / b rounded toward zero; b == 0 is undefined"),
    Spec("irem", "pure", 2, INTS, _same, _trunc_rem, "integer remainder with the sign of a; b == 0 is undefined"),
    # comparisons: ordered for floats (False if either is NaN) except ne (True if either is NaN)
    Spec("eq", "pure", 2, NUMBERS + (T.bool_,), _boolean, np.equal, "a == b (ordered)"),
    Spec("ne", "pure", 2, NUMBERS + (T.bool_,), _boolean, np.not_equal, "a != b (unordered)"),
    Spec("lt", "pure", 2, NUMBERS, _boolean, np.less, "a < b (ordered)"),
    Spec("le", "pure", 2, NUMBERS, _boolean, np.less_equal, "a <= b (ordered)"),
    Spec("gt", "pure", 2, NUMBERS, _boolean, np.greater, "a > b (ordered)"),
    Spec("ge", "pure", 2, NUMBERS, _boolean, np.greater_equal, "a >= b (ordered)"),
    Spec("ult", "pure", 2, FLOATS, _boolean, lambda a, b: ~np.greater_equal(a, b), "a < b or unordered"),
    Spec("ule", "pure", 2, FLOATS, _boolean, lambda a, b: ~np.greater(a, b), "a <= b or unordered"),
    Spec("ugt", "pure", 2, FLOATS, _boolean, lambda a, b: ~np.less_equal(a, b), "a > b or unordered"),
    Spec("uge", "pure", 2, FLOATS, _boolean, lambda a, b: ~np.less(a, b), "a >= b or unordered"),
    Spec("isnan", "pure", 1, FLOATS, _boolean, np.isnan, "a is NaN"),
    Spec("select", "pure", 3, (T.bool_,), lambda ts, at: ts[1], lambda c, a, b: np.where(c, a, b), "c ? a : b"),
    # bits
    Spec("and", "pure", 2, BITS, _same, np.bitwise_and, "bitwise (logical for bool) and"),
    Spec("or", "pure", 2, BITS, _same, np.bitwise_or, "bitwise (logical for bool) or"),
    Spec("xor", "pure", 2, BITS, _same, np.bitwise_xor, "bitwise (logical for bool) xor"),
    Spec("not", "pure", 1, BITS, _same, np.invert, "bitwise (logical for bool) not"),
    Spec("shl", "pure", 2, INTS, _same, _shl, "a << b; b must be below the bit width"),
    Spec("shr", "pure", 2, INTS, _same, _shr, "a >> b (arithmetic if signed); b below the bit width"),
    # conversions (attrs = (target dtype name,))
    Spec(
        "bitcast",
        "pure",
        1,
        NUMBERS,
        lambda ts, at: T.by_name(at[0]),
        lambda a, out: a.view(out.np),
        "same bits, new type",
    ),
    Spec(
        "convert",
        "pure",
        1,
        NUMBERS + STORAGE_INTS,
        lambda ts, at: T.by_name(at[0]),
        _convert,
        "int<->int (sign/zero extend, truncate; u8/i8/i16 only to and from the wide ints), int->f32/f64 (RTE), "
        "float->int (toward zero; NaN and out of range undefined), f16->f32, f32<->f64 (RTE)",
    ),
    Spec("floor", "pure", 1, FLOATS, _same, np.floor, "round toward -inf"),
    Spec("ceil", "pure", 1, FLOATS, _same, np.ceil, "round toward +inf"),
    Spec("trunc", "pure", 1, FLOATS, _same, np.trunc, "round toward zero"),
    Spec("round_even", "pure", 1, FLOATS, _same, np.rint, "round half to even"),
    Spec(
        "f16_from_bits",
        "pure",
        1,
        (T.uint32,),
        lambda ts, at: T.float16,
        _f16_from_bits,
        "the f16 whose bits are the low 16 of a",
    ),
    Spec(
        "f16_to_bits",
        "pure",
        1,
        (T.float16,),
        lambda ts, at: T.uint32,
        _f16_to_bits,
        "the bits of an f16, zero-extended",
    ),
    # constants (attrs = (numpy scalar,))
    Spec("const", "const", 0, (), lambda ts, at: T.from_numpy(at[0].dtype), None, "a constant"),
    # index space (attrs = (axis,))
    Spec("global_id", "index", 0, (), lambda ts, at: T.uint32, None, "GlobalInvocationId[axis]"),
    Spec("local_id", "index", 0, (), lambda ts, at: T.uint32, None, "LocalInvocationId[axis]"),
    Spec("workgroup_id", "index", 0, (), lambda ts, at: T.uint32, None, "WorkgroupId[axis]"),
    Spec("num_workgroups", "index", 0, (), lambda ts, at: T.uint32, None, "NumWorkgroups[axis]"),
    # memory (attrs = (buffer or shared array name,)); the index is an integer value
    Spec("load", "memory", 1, INTS, None, None, "buffer[index]"),
    Spec("store", "memory", 2, INTS, None, None, "buffer[index] = value"),
    Spec("shared_load", "memory", 1, INTS, None, None, "shared[index]"),
    Spec("shared_store", "memory", 2, INTS, None, None, "shared[index] = value"),
    # vector memory access (attrs = (buffer name,) + for vload (component,)): the index counts
    # aligned vectors of VECTOR_WIDTH elements; codegen loads each distinct vector once (16 bytes for f32)
    Spec("vload", "memory", 1, INTS, None, None, "buffer[index * 4 + component]"),
    Spec("vstore", "memory", 5, INTS, None, None, "buffer[index * 4 + j] = value j, for j < 4"),
    # the same into a shared array; codegen then declares that array as vectors of 4 (one wide store each)
    Spec("shared_vstore", "memory", 5, INTS, None, None, "shared[index * 4 + j] = value j, for j < 4"),
    # synchronisation and subgroups
    Spec("barrier", "sync", 0, (), lambda ts, at: None, None, "workgroup execution and memory barrier"),
    # orders shared-memory accesses between the invocations of one subgroup only: for tiles a subgroup
    # alone writes and reads, where a workgroup barrier would make every subgroup wait for the slowest
    Spec(
        "subgroup_barrier",
        "sync",
        0,
        (),
        lambda ts, at: None,
        None,
        "subgroup execution barrier; orders the subgroup's workgroup-memory accesses",
    ),
    Spec(
        "shuffle_xor",
        "subgroup",
        1,
        NUMBERS + (T.bool_,),
        _same,
        None,
        "the value of the invocation whose subgroup index is ours xor attrs[0] (a constant below the subgroup size)",
    ),
    Spec(
        "subgroup_id",
        "subgroup_index",
        0,
        (),
        lambda ts, at: T.uint32,
        None,
        "the invocation's subgroup in its workgroup: local linear index // the kernel's subgroup_size",
    ),
    # cooperative matrices (types.MatrixType), one value per subgroup; see matrix_result_type
    Spec("cm_fill", "matrix", 1, (), None, None, "a matrix of the result type with every element = a"),
    Spec(
        "cm_shared_load",
        "matrix",
        1,
        INTS,
        None,
        None,
        "attrs (array, stride, layout): element (r, c) is array[index + r*stride + c] (row) or [index + c*stride + r] (col)",
    ),
    Spec("cm_shared_store", "matrix", 2, INTS, None, None, "stores matrix m the way cm_shared_load loads it"),
    Spec(
        "cm_mul_add",
        "matrix",
        3,
        (),
        None,
        None,
        "a·b + c for f16 a (M×K), b (K×N), f32 c (M×N): per element, c then each exact product a[i,k]·b[k,j] "
        "added for k = 0, 1, ..., K-1, each sum rounded to f32 (the CPU's order; a device may sum otherwise)",
    ),
    Spec(
        "cm_tensor_load",
        "matrix",
        2,
        INTS,
        None,
        None,
        "attrs (buffer, rows, cols, edge): the block at (row0, col0) of the buffer read as a rows×cols row-major "
        "matrix; edge 'clamp': elements outside it read +0.0, 'inside': the block must lie inside",
    ),
    Spec(
        "cm_tensor_store",
        "matrix",
        3,
        INTS,
        None,
        None,
        "stores matrix m where cm_tensor_load with the same operands loads from ('clamp': elements outside are "
        "dropped); an f32 matrix into an f16 buffer is narrowed round-to-nearest-even",
    ),
    # Workgroup-scope only (VK_NV_cooperative_matrix2's reductions, conversions, per-element operations and
    # tensor views): the flash-attention forward's steps (vkml/kernels/attention_cm2.py).
    Spec(
        "cm_tensor_load_transposed",
        "matrix",
        2,
        INTS,
        None,
        None,
        "attrs as cm_tensor_load: element (r, c) is the tensor's element (row0 + c, col0 + r) (a view with "
        "permutation (1, 0): the block of m.cols rows and m.rows columns at (row0, col0), transposed)",
    ),
    Spec(
        "cm_tensor_store_rows",
        "matrix",
        4,
        INTS,
        None,
        None,
        "cm_tensor_store of matrix m (operand 3) whose rows r >= kept (operand 4, a u32) are dropped (a clipping view)",
    ),
    Spec(
        "cm_reduce_rows",
        "matrix",
        1,
        (),
        None,
        None,
        "attrs (combine,) 'max' or 'add': a matrix of the result type (the operand's rows, any columns) whose every "
        "column holds the combine of its row of the f32 acc operand; the CPU combines the row's columns in the "
        "contract's fixed tree (neighbours paired level by level, an odd tail carried up), a device in its own order; "
        "max(a, b) is a if a > b or a is NaN, else b (NaN propagates)",
    ),
    Spec(
        "cm_map",
        "matrix",
        -1,
        (),
        None,
        None,
        "attrs (ElementFunction,): element (r, c) of the result is the function of (r, c, m[r, c], then per further "
        "operand its element (r, c) (a matrix of m's shape) or its value (a scalar)); the result has m's type",
    ),
    Spec("cm_add", "matrix", 2, (), None, None, "element-wise a + b of two f32 acc matrices of one type"),
    Spec("cm_sub", "matrix", 2, (), None, None, "element-wise a - b of two f32 acc matrices of one type"),
    Spec("cm_mul", "matrix", 2, (), None, None, "element-wise a * b of two f32 acc matrices of one type"),
    Spec("cm_scale", "matrix", 2, (), None, None, "element-wise m * s of an f32 acc matrix m and an f32 scalar s"),
    Spec(
        "cm_convert",
        "matrix",
        1,
        (),
        None,
        None,
        "the f32 acc operand as a matrix of the result type (its shape and scope; f16, use a, b or acc): each "
        "element rounded to nearest even",
    ),
]

SPECS: dict[str, Spec] = {s.name: s for s in _TABLE}

# Matrix instructions whose first attr names a shared array (printed ``array[index]``), and their layouts.
MATRIX_MEMORY_OPS = ("cm_shared_load", "cm_shared_store")
MATRIX_LAYOUTS = ("row", "col")
# Matrix instructions on a storage buffer read as a 2-D row-major tensor (printed ``buffer[row0], col0, ...``).
MATRIX_TENSOR_OPS = ("cm_tensor_load", "cm_tensor_store", "cm_tensor_load_transposed", "cm_tensor_store_rows")
MATRIX_TENSOR_LOADS = ("cm_tensor_load", "cm_tensor_load_transposed")
# Element-wise arithmetic on accumulators (SPIR-V's OpFAdd, OpFSub, OpFMul on matrices, OpMatrixTimesScalar).
# No division: OpFDiv is not correctly rounded on devices; a cm_map with the DSL's division does it exactly.
MATRIX_ELEMENTWISE = {"cm_add": np.add, "cm_sub": np.subtract, "cm_mul": np.multiply, "cm_scale": np.multiply}
REDUCE_COMBINES = ("max", "add")
WORKGROUP_MATRIX_OPS = ("cm_reduce_rows", "cm_map", "cm_convert", *MATRIX_ELEMENTWISE)
TENSOR_EDGES = ("clamp", "inside")

# Elements per vector of ``vload`` / ``vstore``: 16 bytes of float32, the widest load NVIDIA issues.
VECTOR_WIDTH = 4

# Conversions the `convert` instruction accepts; f32->f16 is missing on purpose (see ops/mathlib: narrowing is software).
CONVERSIONS = (
    {(a, b) for a in INTS for b in INTS if a is not b}
    | {(a, f) for a in INTS for f in (T.float32, T.float64)}
    | {(f, i) for f in FLOATS for i in INTS}
    | {(T.float16, T.float32), (T.float32, T.float64), (T.float64, T.float32)}
    | {(a, b) for a in STORAGE_INTS for b in INTS}
    | {(a, b) for a in INTS for b in STORAGE_INTS}
)


def check_bitcast(src: T.DType, dst: T.DType) -> None:
    if src.nbytes != dst.nbytes or src is T.bool_ or dst is T.bool_ or T.float16 in (src, dst):
        raise IRError(
            f"bitcast {src.short} -> {dst.short}: types must be numbers of the same width (f16: use f16_to_bits)"
        )


def check_convert(src: T.DType, dst: T.DType) -> None:
    if (src, dst) not in CONVERSIONS:
        hint = " (narrowing to f16 is done in software: vkml.ops.mathlib.f32_to_f16)" if dst is T.float16 else ""
        raise IRError(f"convert {src.short} -> {dst.short} is not an exact IR conversion{hint}")


def _tensor_result_type(op: str, arg_types: tuple, attrs: tuple, result, array: T.DType | None):
    """Check ``cm_tensor_load`` / ``cm_tensor_store`` (``array``: the buffer's element type)."""
    ok = len(attrs) == 4 and isinstance(attrs[0], str) and attrs[3] in TENSOR_EDGES
    if not ok or not all(isinstance(a, int) and a >= 1 for a in attrs[1:3]):
        raise IRError(f"{op} attrs are {attrs!r}; expected (buffer name, rows >= 1, cols >= 1, 'clamp' or 'inside')")
    if not (arg_types[0].is_int and arg_types[1].is_int):
        raise IRError(f"{op}: the block's row and column are {arg_types[0].short}, {arg_types[1].short}: not integers")
    load = op in MATRIX_TENSOR_LOADS
    matrix = result if load else arg_types[2]
    if not T.is_matrix(matrix):
        raise IRError(f"{op}: {'result' if load else 'value'} is not a matrix")
    if op in ("cm_tensor_load_transposed", "cm_tensor_store_rows") and matrix.scope != "workgroup":
        raise IRError(f"{op}: takes workgroup-scope matrices (a tensor view), not {matrix.short}")
    if op == "cm_tensor_store_rows" and arg_types[3] is not T.uint32:
        raise IRError(f"{op}: the rows kept are {arg_types[3].short}, not u32")
    # A store may narrow an f32 matrix into an f16 buffer (round to nearest even); otherwise the types match.
    narrows = not load and (matrix.elem, array) == (T.float32, T.float16)
    if array is not None and matrix.elem is not array and not narrows:
        raise IRError(f"{op}: a {matrix.short} in a buffer of {array.short}")
    return result if load else None


def _accumulator(op: str, t) -> T.MatrixType:
    """``t`` if it is a workgroup-scope f32 accumulator (the operand of the element-wise and reducing ops)."""
    if not (T.is_matrix(t) and t.use == "acc" and t.elem is T.float32 and t.scope == "workgroup"):
        raise IRError(f"{op} takes workgroup-scope f32 acc matrices, got {getattr(t, 'short', t)}")
    return t


def _workgroup_result_type(op: str, arg_types: tuple, attrs: tuple, result):
    """Check the workgroup-scope reductions, maps, element-wise arithmetic and conversions."""
    if op == "cm_map":
        fn = attrs[0] if len(attrs) == 1 else None
        if not arg_types or getattr(fn, "param_types", None) is None:
            raise IRError(f"cm_map takes a matrix, further operands and attrs (ElementFunction,), got {attrs!r}")
        matrix = arg_types[0]
        if not (T.is_matrix(matrix) and matrix.scope == "workgroup"):
            raise IRError(f"cm_map maps a workgroup-scope matrix, got {getattr(matrix, 'short', matrix)}")
        for t in arg_types[1:]:
            if T.is_matrix(t) and (t.rows, t.cols, t.scope) != (matrix.rows, matrix.cols, matrix.scope):
                raise IRError(f"cm_map: operand {t.short} is not of {matrix.short}'s shape")
        want = (T.uint32, T.uint32, *(t.elem if T.is_matrix(t) else t for t in arg_types))
        if tuple(fn.param_types) != want or fn.result_type is not matrix.elem:
            shown = ", ".join(t.short for t in want)
            raise IRError(f"cm_map: the function must take ({shown}) and give {matrix.elem.short}")
        return matrix
    spec = SPECS[op]
    if len(arg_types) != spec.nargs:
        raise IRError(f"{op} takes {spec.nargs} operand(s), got {len(arg_types)}")
    if op == "cm_reduce_rows":
        source = _accumulator(op, arg_types[0])
        if tuple(attrs) not in [(c,) for c in REDUCE_COMBINES]:
            raise IRError(f"cm_reduce_rows attrs are {attrs!r}; expected ('max',) or ('add',)")
        if not T.is_matrix(result) or _accumulator(op, result).rows != source.rows:
            raise IRError(f"cm_reduce_rows: the result {getattr(result, 'short', result)} must have {source.rows} rows")
        return result
    if attrs != ():
        raise IRError(f"{op} takes no attrs, got {attrs!r}")
    if op == "cm_convert":
        source = _accumulator(op, arg_types[0])
        ok = T.is_matrix(result) and result.elem is T.float16 and result.scope == "workgroup"
        if not ok or (result.rows, result.cols) != (source.rows, source.cols):
            raise IRError(f"cm_convert: {source.short} cannot become {getattr(result, 'short', result)}")
        return result
    a = _accumulator(op, arg_types[0])
    if op == "cm_scale":
        if arg_types[1] is not T.float32:
            raise IRError(f"cm_scale multiplies by an f32 scalar, got {arg_types[1].short}")
    elif _accumulator(op, arg_types[1]) is not a:
        raise IRError(f"{op}: matrices of different types ({a.short}, {arg_types[1].short})")
    return a


def matrix_result_type(op: str, arg_types: tuple, attrs: tuple, result, array: T.DType | None = None):
    """Check a matrix instruction; return its result type (``result``, the type its result is given, for
    ``cm_fill``, ``cm_shared_load`` and ``cm_tensor_load``). ``array``: the element type of the shared
    array or buffer it accesses."""
    spec = SPECS[op]
    if op in WORKGROUP_MATRIX_OPS:
        return _workgroup_result_type(op, arg_types, attrs, result)
    if len(arg_types) != spec.nargs:
        raise IRError(f"{op} takes {spec.nargs} operand(s), got {len(arg_types)}")
    if op in MATRIX_TENSOR_OPS:
        return _tensor_result_type(op, arg_types, attrs, result, array)
    if op in MATRIX_MEMORY_OPS:
        ok = len(attrs) == 3 and isinstance(attrs[0], str) and isinstance(attrs[1], int) and attrs[1] >= 1
        if not ok or attrs[2] not in MATRIX_LAYOUTS:
            raise IRError(f"{op} attrs are {attrs!r}; expected (array name, stride >= 1, 'row' or 'col')")
        if not arg_types[0].is_int:
            raise IRError(f"{op}: index is {arg_types[0].short}, not an integer")
        matrix = result if op == "cm_shared_load" else arg_types[1]
        if not T.is_matrix(matrix):
            raise IRError(f"{op}: {'result' if op == 'cm_shared_load' else 'value'} is not a matrix")
        if array is not None and matrix.elem is not array:
            raise IRError(f"{op}: a {matrix.short} in a shared array of {array.short}")
        inner = matrix.cols if attrs[2] == "row" else matrix.rows
        if op == "cm_shared_store" and attrs[1] < inner:
            raise IRError(f"{op}: stride {attrs[1]} is below the {inner} elements of one {attrs[2]}: they overlap")
        return result if op == "cm_shared_load" else None
    if attrs != ():
        raise IRError(f"{op} takes no attrs, got {attrs!r}")
    if op == "cm_fill":
        if not T.is_matrix(result) or arg_types[0] is not result.elem:
            raise IRError(f"cm_fill: a {arg_types[0].short} cannot fill {getattr(result, 'short', result)}")
        return result
    a, b, c = arg_types
    if not all(T.is_matrix(t) for t in arg_types) or (a.use, b.use, c.use) != ("a", "b", "acc"):
        shown = ", ".join(t.short for t in arg_types)
        raise IRError(f"cm_mul_add takes an a, a b and an acc matrix, got ({shown})")
    if (a.elem, b.elem, c.elem) != (T.float16, T.float16, T.float32):
        raise IRError("cm_mul_add multiplies f16 matrices into an f32 accumulator")
    if not a.scope == b.scope == c.scope:
        raise IRError(f"cm_mul_add: matrices of different scopes ({a.short}, {b.short}, {c.short})")
    if a.rows != c.rows or b.cols != c.cols or a.cols != b.rows:
        raise IRError(f"cm_mul_add: shapes {a.short} · {b.short} + {c.short} do not fit")
    return c


def result_type(op: str, arg_types: tuple, attrs: tuple) -> T.DType | None:
    """Check operand types of a pure/const/index/sync/subgroup instruction; return its result type."""
    spec = SPECS.get(op)
    if spec is None:
        raise IRError(f"unknown instruction {op!r}")
    if any(T.is_matrix(t) for t in arg_types):
        raise IRError(f"{op} does not take cooperative matrices (only the cm_ instructions do)")
    if len(arg_types) != spec.nargs:
        raise IRError(f"{op} takes {spec.nargs} operand(s), got {len(arg_types)}")
    if spec.nargs:
        if arg_types[0] not in spec.operand_types:
            allowed = ", ".join(t.short for t in spec.operand_types)
            raise IRError(f"{op}: operand type {arg_types[0].short} not allowed (allowed: {allowed})")
        rest = arg_types[1:] if op != "select" else arg_types[2:]
        first = arg_types[0] if op != "select" else arg_types[1]
        if op in ("shl", "shr"):
            if not arg_types[1].is_int:
                raise IRError(f"{op}: shift count must be an integer, got {arg_types[1].short}")
        elif any(t is not first for t in rest):
            shown = ", ".join(t.short for t in arg_types)
            raise IRError(f"{op}: operand types differ ({shown})")
    if op == "bitcast":
        check_bitcast(arg_types[0], T.by_name(attrs[0]))
    if op == "convert":
        check_convert(arg_types[0], T.by_name(attrs[0]))
    return spec.result(arg_types, attrs)
