"""The DSL: build kernel IR by calling Python functions on IR values.

    kb = KernelBuilder("scale", local_size=(64, 1, 1))
    x = kb.buffer("x", float32, "read")
    out = kb.buffer("out", float32, "write")
    n = kb.param("n", uint32)
    with kb:
        i = global_id(0)
        with if_(i < n):
            out[i] = x[i] * 2.0
    kernel = kb.finish()

Arithmetic operators on ``Value`` emit instructions into the innermost open block. Python
numbers next to a Value become constants of its type. Python control flow cannot look at an
IR value (``bool(v)`` raises): use ``select``/``where`` or ``if_`` / ``range_``.

Common subexpressions are merged here, as instructions are emitted, and nowhere later: emitting a
pure instruction (kind "pure", "index" or "const" in the instruction table: arithmetic, compares,
conversions, constants, invocation ids) whose op, operands, attributes and result type equal those
of one already emitted in the current block, or in a block around it of the same kernel, returns
that instruction's result instead of a new one. Such a result dominates every later statement of
its block and of the blocks opened inside (structured control flow), and a pure instruction's value
depends on its operands alone, so the bits are those a second instruction would give. Never merged:
loads (memory may be written in between), stores, barriers, subgroup and cooperative-matrix
instructions, anything of a sibling branch or of a block already closed (it does not dominate),
and anything across two kernels (a kernel built while another is open starts its own table).
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from ..errors import DTypeError, IRError
from . import types as T
from .core import Block, BufferDecl, ElementFunction, If, Instr, Kernel, Loop, ParamDecl, SharedDecl, Value
from .instructions import SPECS, VECTOR_WIDTH, matrix_result_type, result_type

_state = threading.local()


def _stack() -> list[Block]:
    st = getattr(_state, "stack", None)
    if st is None:
        st = _state.stack = []
    return st


class _KernelValues(dict):
    """The merged values of a kernel's top block; a lookup goes no further out than this table."""


def _tables() -> list[dict]:
    """Per open block (parallel to ``_stack()``): merge key -> the pure value the block defines."""
    tables = getattr(_state, "tables", None)
    if tables is None:
        tables = _state.tables = []
    return tables


def _open(block: Block, table: dict | None = None) -> None:
    _stack().append(block)
    _tables().append({} if table is None else table)


def _close() -> None:
    _stack().pop()
    _tables().pop()


# The kinds of instruction whose result is a function of their operands and attributes alone.
_MERGED_KINDS = frozenset(("pure", "index", "const"))


def _merge_key(op: str, args: tuple, attrs: tuple, rtype) -> tuple:
    # A numpy scalar by its dtype and bytes: -0.0 and 0.0, NaN payloads and 1 vs 1.0 stay apart.
    # Other attributes (axes, type names) by type and value: True and 1 stay apart.
    attrs = tuple((a.dtype.str, a.tobytes()) if isinstance(a, np.generic) else (type(a), a) for a in attrs)
    return (op, rtype, args, attrs)


def _merged(key: tuple) -> Value | None:
    for table in reversed(_tables()):
        found = table.get(key)
        if found is not None or isinstance(table, _KernelValues):
            return found
    return None


def _current() -> Block:
    st = _stack()
    if not st:
        raise IRError("IR values can only be used while a KernelBuilder is open (`with kb:`)")
    return st[-1]


def current_block() -> Block:
    """The block instructions go to now (where a value defined now is visible: here and in blocks opened inside)."""
    return _current()


def is_open(block: Block) -> bool:
    """Whether ``block`` is the current block or one around it, so values defined in it so far are in scope."""
    return any(b is block for b in _stack())


def emit(op: str, *args: Value, attrs: tuple = ()) -> Value | None:
    """Append one instruction to the current block; return its result value."""
    try:
        rtype = result_type(op, tuple(a.dtype for a in args), attrs)
    except IRError as e:
        raise DTypeError(str(e)) from None
    return _append(op, args, attrs, rtype)


def _append(op: str, args, attrs: tuple, rtype) -> Value | None:
    args = tuple(args)
    spec = SPECS.get(op)
    key = None
    if rtype is not None and spec is not None and spec.kind in _MERGED_KINDS:
        key = _merge_key(op, args, attrs, rtype)
        found = _merged(key)
        if found is not None:  # the module's text: an equal pure instruction dominates this point
            return found
    result = Value(rtype) if rtype is not None else None
    _current().body.append(Instr(op, args, result, attrs))
    if key is not None:
        _tables()[-1][key] = result
    return result


# ---------------------------------------------------------------- constants and coercion


def const(value, dtype: T.DType) -> Value:
    """A constant of ``dtype`` (float constants must be exactly representable)."""
    if dtype is T.bool_:
        scalar = np.bool_(bool(value))
    elif dtype.is_float:
        with np.errstate(over="ignore"):
            scalar = dtype.np.type(value)
        inexact = not (np.isnan(scalar) or float(scalar) == float(value))
        if inexact and not getattr(_state, "round_float_constants", False):
            raise DTypeError(f"constant {value!r} is not exactly representable as {dtype.name}")
    else:
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise DTypeError(f"constant {value!r} is not an integer, cannot be {dtype.name}")
        info = np.iinfo(dtype.np)
        if not info.min <= int(value) <= info.max:
            raise DTypeError(f"constant {value} is out of range for {dtype.name}")
        scalar = dtype.np.type(value)
    return emit("const", attrs=(scalar,))


@contextlib.contextmanager
def rounding_float_constants():
    """Inside, a Python float a float type cannot hold rounds to the nearest instead of raising.

    PyTorch rounds a Python scalar to the tensor's dtype; custom-operator bodies (vkml.dsl.elementwise)
    run in this context so that ``x * 0.1`` means what it means there. vkml's own ops stay strict.

    >>> with rounding_float_constants():
    ...     tenth = const(0.1, T.float32)   # 0.100000001490116...
    """
    previous = getattr(_state, "round_float_constants", False)
    _state.round_float_constants = True
    try:
        yield
    finally:
        _state.round_float_constants = previous


def const_bits(bits: int, dtype: T.DType) -> Value:
    """A float constant given by its bit pattern (for NaN payloads and exact edge values)."""
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.nbytes]
    return emit("const", attrs=(np.array(bits, dtype=u).view(dtype.np)[()],))


def as_value(x, like: Value | None = None, dtype: T.DType | None = None) -> Value:
    """``x`` if it is a Value, else a constant of ``like``'s (or ``dtype``'s) type."""
    if isinstance(x, Value):
        return x
    target = dtype or (like.dtype if like is not None else None)
    if target is None:
        raise DTypeError(f"cannot infer an IR type for the Python value {x!r}; use const(value, dtype)")
    if isinstance(x, (bool, np.bool_)) and target is not T.bool_:
        raise DTypeError(f"Python bool {x!r} used where {target.name} is expected")
    if isinstance(x, (int, float, bool, np.generic)):
        if isinstance(x, float) and not target.is_float:
            raise DTypeError(f"Python float {x!r} used where {target.name} is expected")
        return const(x, target)
    raise DTypeError(f"unsupported Python value {x!r} ({type(x).__name__}) in a kernel")


def _binary(op: str, a, b) -> Value:
    if not isinstance(a, Value):
        a = as_value(a, like=b)
    b = as_value(b, like=a)
    return emit(op, a, b)


# ---------------------------------------------------------------- operators on Value


# Float division is a decomposition into primitives, defined by the math library
# (vkml.ops.mathlib), which installs it here on import; ir/ does not depend on ops/.
float_division = None


def _div(a: Value, b) -> Value:
    if a.dtype.is_float:
        if float_division is None:
            raise IRError("float division needs the math library: import vkml (or vkml.ops.mathlib) first")
        return float_division(a, as_value(b, like=a))
    return _binary("idiv", a, b)


def _rdiv(a: Value, b) -> Value:
    return _div(as_value(b, like=a), a)


def _mod(a: Value, b) -> Value:
    if a.dtype.is_float:
        raise DTypeError("% on float IR values is not a primitive; use mathlib.remainder")
    return _binary("irem", a, b)


def _no_bool(self):
    raise DTypeError(
        "an IR value has no Python truth value (Python `if`, `while`, `and`, `or`, `not` cannot "
        "look at it); use dsl.where(cond, a, b) / select, or `with if_(cond):`"
    )


_OPERATORS = {
    "__add__": lambda a, b: _binary("add", a, b),
    "__radd__": lambda a, b: _binary("add", b, a),
    "__sub__": lambda a, b: _binary("sub", a, b),
    "__rsub__": lambda a, b: _binary("sub", b, a),
    "__mul__": lambda a, b: _binary("mul", a, b),
    "__rmul__": lambda a, b: _binary("mul", b, a),
    "__truediv__": _div,
    "__rtruediv__": _rdiv,
    "__mod__": _mod,
    "__neg__": lambda a: emit("neg", a),
    "__lt__": lambda a, b: _binary("lt", a, b),
    "__le__": lambda a, b: _binary("le", a, b),
    "__gt__": lambda a, b: _binary("gt", a, b),
    "__ge__": lambda a, b: _binary("ge", a, b),
    "__and__": lambda a, b: _binary("and", a, b),
    "__rand__": lambda a, b: _binary("and", b, a),
    "__or__": lambda a, b: _binary("or", a, b),
    "__ror__": lambda a, b: _binary("or", b, a),
    "__xor__": lambda a, b: _binary("xor", a, b),
    "__rxor__": lambda a, b: _binary("xor", b, a),
    "__invert__": lambda a: emit("not", a),
    "__lshift__": lambda a, b: emit("shl", a, as_value(b, like=a)),
    "__rshift__": lambda a, b: emit("shr", a, as_value(b, like=a)),
    "__bool__": _no_bool,
    "__index__": _no_bool,
}
for _name, _fn in _OPERATORS.items():
    setattr(Value, _name, _fn)
# == and != stay identity-based (Values are dict keys); use eq()/ne() for IR comparisons.


# ---------------------------------------------------------------- named instructions


def eq(a, b) -> Value:
    return _binary("eq", a, b)


def ne(a, b) -> Value:
    return _binary("ne", a, b)


def select(cond: Value, a, b) -> Value:
    """``a`` where ``cond`` else ``b`` (a pure select: no NaN logic)."""
    if not isinstance(a, Value):
        a = as_value(a, like=b)
    b = as_value(b, like=a)
    return emit("select", as_value(cond, dtype=T.bool_), a, b)


where = select


def isnan(a: Value) -> Value:
    return emit("isnan", a)


def bitcast(a: Value, dtype: T.DType) -> Value:
    return emit("bitcast", a, attrs=(dtype.name,))


def convert(a: Value, dtype: T.DType) -> Value:
    if a.dtype is dtype:
        return a
    return emit("convert", a, attrs=(dtype.name,))


def floor(a: Value) -> Value:
    return emit("floor", a)


def ceil(a: Value) -> Value:
    return emit("ceil", a)


def trunc(a: Value) -> Value:
    return emit("trunc", a)


def round_even(a: Value) -> Value:
    return emit("round_even", a)


def f16_from_bits(a: Value) -> Value:
    return emit("f16_from_bits", a)


def f16_to_bits(a: Value) -> Value:
    return emit("f16_to_bits", a)


def global_id(axis: int = 0) -> Value:
    return emit("global_id", attrs=(axis,))


def local_id(axis: int = 0) -> Value:
    return emit("local_id", attrs=(axis,))


def workgroup_id(axis: int = 0) -> Value:
    return emit("workgroup_id", attrs=(axis,))


def num_workgroups(axis: int = 0) -> Value:
    return emit("num_workgroups", attrs=(axis,))


def barrier() -> None:
    """Workgroup barrier; must be reached by every invocation of the workgroup (uniform control flow)."""
    emit("barrier")


def subgroup_barrier() -> None:
    """Barrier among the invocations of one subgroup: what one of them wrote to shared memory before it,
    the others read after it. Enough for a tile only its own subgroup writes and reads; must be reached by
    every invocation of the subgroup (the verifier asks workgroup-uniform control flow, as for ``barrier``)."""
    emit("subgroup_barrier")


def shuffle_xor(a: Value, mask: int) -> Value:
    return emit("shuffle_xor", a, attrs=(int(mask),))


def subgroup_id() -> Value:
    """This invocation's subgroup in the workgroup (local linear index // the kernel's subgroup_size)."""
    return emit("subgroup_id")


# ---------------------------------------------------------------- cooperative matrices


def _emit_matrix(op: str, args: tuple, attrs: tuple = (), result=None, array: T.DType | None = None):
    try:
        rtype = matrix_result_type(op, tuple(a.dtype for a in args), attrs, result, array)
    except IRError as e:
        raise DTypeError(str(e)) from None
    return _append(op, args, attrs, rtype)


def matrix_fill(value, mtype: T.MatrixType) -> Value:
    """A cooperative matrix of ``mtype`` whose every element is ``value`` (the same in the whole subgroup).

    >>> acc = matrix_fill(-0.0, T.matrix_type(T.float32, 16, 16, "acc"))
    """
    return _emit_matrix("cm_fill", (as_value(value, dtype=mtype.elem),), result=mtype)


def matrix_mul_add(a: Value, b: Value, c: Value) -> Value:
    """``a · b + c``: f16 matrices a (M×K) and b (K×N), f32 accumulator c (M×N); see ``cm_mul_add``.

    >>> acc = matrix_mul_add(a_tile.load_matrix(0, A, stride=40), b_tile.load_matrix(0, B, stride=136), acc)
    """
    return _emit_matrix("cm_mul_add", (a, b, c))


def matrix_map(body_fn, matrix: Value, *operands: Value) -> Value:
    """A matrix of ``matrix``'s type whose element (r, c) is ``body_fn(r, c, matrix[r, c], *per_operand)``
    (``cm_map``), ``per_operand`` being an operand's element (r, c) where it is a matrix of the same shape and
    its value where it is a scalar. ``body_fn`` builds the function on IR values (u32 row and column), its own
    closed scope: it may not use a value of the kernel around it (pass such a value as an operand).

    >>> masked = matrix_map(lambda r, c, s, q0: select(c > r + q0, -inf, s), scores, q0)
    """
    mtype = matrix.dtype
    types = (T.uint32, T.uint32, mtype.elem, *(o.dtype.elem if T.is_matrix(o.dtype) else o.dtype for o in operands))
    params = tuple(Value(t) for t in types)
    block = Block()
    _open(block, _KernelValues())  # nothing outside is merged into (or visible from) the function
    try:
        out = as_value(body_fn(*params), dtype=mtype.elem)
    finally:
        _close()
    block.yields = (out,)
    return _emit_matrix("cm_map", (matrix, *operands), (ElementFunction(params, block),))


def matrix_reduce_rows(matrix: Value, combine: str, cols: int) -> Value:
    """A workgroup-scope f32 accumulator of ``matrix``'s rows and ``cols`` columns whose every column holds the
    ``combine`` ("max" or "add") of ``matrix``'s row (``cm_reduce_rows``).

    >>> row_max = matrix_reduce_rows(scores, "max", 16)
    """
    mtype = matrix.dtype
    result = T.matrix_type(T.float32, mtype.rows, cols, "acc", "workgroup") if T.is_matrix(mtype) else None
    return _emit_matrix("cm_reduce_rows", (matrix,), (combine,), result=result)


def matrix_convert(matrix: Value, mtype: T.MatrixType) -> Value:
    """``matrix`` (an f32 accumulator) as a matrix of ``mtype`` (f16, e.g. an A operand), rounded to nearest even."""
    return _emit_matrix("cm_convert", (matrix,), result=mtype)


def matrix_add(a: Value, b: Value) -> Value:
    """Element-wise ``a + b`` of two f32 accumulators of one type (``cm_add``)."""
    return _emit_matrix("cm_add", (a, b))


def matrix_sub(a: Value, b: Value) -> Value:
    """Element-wise ``a - b`` of two f32 accumulators of one type (``cm_sub``)."""
    return _emit_matrix("cm_sub", (a, b))


def matrix_mul(a: Value, b: Value) -> Value:
    """Element-wise ``a * b`` of two f32 accumulators of one type (``cm_mul``)."""
    return _emit_matrix("cm_mul", (a, b))


def matrix_scale(a: Value, scalar) -> Value:
    """Element-wise ``a * scalar`` for an f32 accumulator and an f32 scalar (``cm_scale``)."""
    return _emit_matrix("cm_scale", (a, as_value(scalar, dtype=T.float32)))


# ---------------------------------------------------------------- memory


class BufferRef:
    """A kernel's storage buffer; ``buf[i]`` loads, ``buf[i] = v`` stores."""

    def __init__(self, decl: BufferDecl):
        self.decl = decl

    @property
    def dtype(self) -> T.DType:
        return self.decl.dtype

    def __getitem__(self, index) -> Value:
        if self.decl.access == "write":
            raise IRError(f"load from write-only buffer {self.decl.name!r}")
        index = as_value(index, dtype=T.uint32)
        _check_index(index, f"buffer {self.decl.name!r}")
        result = Value(self.decl.dtype)
        _current().body.append(Instr("load", (index,), result, (self.decl.name,)))
        return result

    def __setitem__(self, index, value) -> None:
        if self.decl.access == "read":
            raise IRError(f"store to read-only buffer {self.decl.name!r}")
        index = as_value(index, dtype=T.uint32)
        _check_index(index, f"buffer {self.decl.name!r}")
        value = as_value(value, dtype=self.decl.dtype)
        if value.dtype is not self.decl.dtype:
            raise DTypeError(f"store of {value.dtype.short} into {self.decl.dtype.short} buffer {self.decl.name!r}")
        _current().body.append(Instr("store", (index, value), None, (self.decl.name,)))

    def vload(self, index, component: int) -> Value:
        """Element ``component`` of aligned vector ``index``: ``buf[4 * index + component]``.

        The vector loads of one index share one memory access on Vulkan (16 bytes of float32).

        >>> x0, x1, x2, x3 = (x.vload(q, c) for c in range(4))   # x[4q] ... x[4q + 3]
        """
        if self.decl.access == "write":
            raise IRError(f"vload from write-only buffer {self.decl.name!r}")
        if not 0 <= int(component) < VECTOR_WIDTH:
            raise IRError(f"vload component {component} is not below the vector width {VECTOR_WIDTH}")
        index = as_value(index, dtype=T.uint32)
        _check_index(index, f"buffer {self.decl.name!r}")
        result = Value(self.decl.dtype)
        _current().body.append(Instr("vload", (index,), result, (self.decl.name, int(component))))
        return result

    def load4(self, index) -> tuple[Value, ...]:
        """The four elements of aligned vector ``index`` (``vload`` of each component)."""
        index = as_value(index, dtype=T.uint32)
        return tuple(self.vload(index, c) for c in range(VECTOR_WIDTH))

    def store4(self, index, values) -> None:
        """``buf[4 * index + j] = values[j]`` for every j, as one vector store (``vstore``).

        >>> out.store4(q, (a, b, c, d))
        """
        if self.decl.access == "read":
            raise IRError(f"vstore to read-only buffer {self.decl.name!r}")
        values = tuple(as_value(v, dtype=self.decl.dtype) for v in values)
        if len(values) != VECTOR_WIDTH:
            raise IRError(f"vstore takes {VECTOR_WIDTH} values, got {len(values)}")
        bad = [v.dtype.short for v in values if v.dtype is not self.decl.dtype]
        if bad:
            raise DTypeError(f"vstore of {', '.join(bad)} into {self.decl.dtype.short} buffer {self.decl.name!r}")
        index = as_value(index, dtype=T.uint32)
        _check_index(index, f"buffer {self.decl.name!r}")
        _current().body.append(Instr("vstore", (index, *values), None, (self.decl.name,)))

    def load_matrix(
        self, at, mtype: T.MatrixType, shape: tuple[int, int], edge: str = "clamp", transposed: bool = False
    ) -> Value:
        """The matrix at ``at`` = (row0, col0) of this buffer read as a row-major ``shape`` = (rows, cols)
        tensor (``cm_tensor_load``): element (r, c) is ``self[(row0 + r) * cols + col0 + c]``; with
        ``edge="clamp"`` elements past the tensor's rows or columns read +0.0. ``transposed`` (workgroup scope,
        ``cm_tensor_load_transposed``): element (r, c) is the tensor's (row0 + c, col0 + r).

        >>> a = A.load_matrix((row0, k), T.matrix_type(T.float16, 128, 64, "a", "workgroup"), (m, k_size))
        """
        if self.decl.access == "write":
            raise IRError(f"matrix load from write-only buffer {self.decl.name!r}")
        row0, col0 = (as_value(v, dtype=T.uint32) for v in at)
        attrs = (self.decl.name, int(shape[0]), int(shape[1]), edge)
        op = "cm_tensor_load_transposed" if transposed else "cm_tensor_load"
        return _emit_matrix(op, (row0, col0), attrs, result=mtype, array=self.decl.dtype)

    def store_matrix(self, at, matrix: Value, shape: tuple[int, int], edge: str = "clamp", rows_kept=None) -> None:
        """Store ``matrix`` where ``load_matrix`` with the same arguments loads from (``cm_tensor_store``);
        an f32 matrix into an f16 buffer is narrowed round-to-nearest-even; ``edge="clamp"`` drops the
        elements past the tensor's rows or columns; ``rows_kept`` (a u32, workgroup scope,
        ``cm_tensor_store_rows``) drops the matrix's rows from that one on."""
        if self.decl.access == "read":
            raise IRError(f"matrix store to read-only buffer {self.decl.name!r}")
        row0, col0 = (as_value(v, dtype=T.uint32) for v in at)
        attrs = (self.decl.name, int(shape[0]), int(shape[1]), edge)
        if rows_kept is not None:
            kept = as_value(rows_kept, dtype=T.uint32)
            _emit_matrix("cm_tensor_store_rows", (row0, col0, matrix, kept), attrs, array=self.decl.dtype)
            return
        _emit_matrix("cm_tensor_store", (row0, col0, matrix), attrs, array=self.decl.dtype)


class SharedRef:
    """A workgroup-shared array; indexing works like ``BufferRef``."""

    def __init__(self, decl: SharedDecl):
        self.decl = decl

    def __getitem__(self, index) -> Value:
        index = as_value(index, dtype=T.uint32)
        _check_index(index, f"shared array {self.decl.name!r}")
        result = Value(self.decl.dtype)
        _current().body.append(Instr("shared_load", (index,), result, (self.decl.name,)))
        return result

    def __setitem__(self, index, value) -> None:
        index = as_value(index, dtype=T.uint32)
        _check_index(index, f"shared array {self.decl.name!r}")
        value = as_value(value, dtype=self.decl.dtype)
        if value.dtype is not self.decl.dtype:
            raise DTypeError(
                f"store of {value.dtype.short} into {self.decl.dtype.short} shared array {self.decl.name!r}"
            )
        _current().body.append(Instr("shared_store", (index, value), None, (self.decl.name,)))

    def store4(self, index, values) -> None:
        """``self[4 * index + j] = values[j]`` for every j, as one vector store (``shared_vstore``).

        The array is then held as vectors of four: its matrix loads and stores need indices and
        strides that are multiples of 4 (whole vectors).

        >>> a_tile.store4(q, (a, b, c, d))
        """
        values = tuple(as_value(v, dtype=self.decl.dtype) for v in values)
        if len(values) != VECTOR_WIDTH:
            raise IRError(f"shared_vstore takes {VECTOR_WIDTH} values, got {len(values)}")
        bad = [v.dtype.short for v in values if v.dtype is not self.decl.dtype]
        if bad:
            raise DTypeError(
                f"shared_vstore of {', '.join(bad)} into {self.decl.dtype.short} shared array {self.decl.name!r}"
            )
        index = as_value(index, dtype=T.uint32)
        _check_index(index, f"shared array {self.decl.name!r}")
        _current().body.append(Instr("shared_vstore", (index, *values), None, (self.decl.name,)))

    def load_matrix(self, index, mtype: T.MatrixType, stride: int, layout: str = "row") -> Value:
        """The cooperative matrix at ``index``: element (r, c) is ``self[index + r*stride + c]`` (row layout)
        or ``self[index + c*stride + r]`` ("col"). ``index`` must be the same in the whole subgroup.

        >>> a = a_tile.load_matrix(base, T.matrix_type(T.float16, 16, 16, "a"), stride=40)
        """
        index = as_value(index, dtype=T.uint32)
        attrs = (self.decl.name, int(stride), layout)
        return _emit_matrix("cm_shared_load", (index,), attrs, result=mtype, array=self.decl.dtype)

    def store_matrix(self, index, matrix: Value, stride: int, layout: str = "row") -> None:
        """Store ``matrix`` where ``load_matrix`` with the same arguments would load it from."""
        index = as_value(index, dtype=T.uint32)
        _emit_matrix("cm_shared_store", (index, matrix), (self.decl.name, int(stride), layout), array=self.decl.dtype)


def _check_index(index: Value, what: str) -> None:
    if not index.dtype.is_int:
        raise DTypeError(f"index into {what} must be an integer, got {index.dtype.short}")


# ---------------------------------------------------------------- control flow


def _run_block(fn, *args) -> tuple[Block, tuple[Value, ...]]:
    block = Block()
    _open(block)
    try:
        out = fn(*args)
    finally:
        _close()
    if out is None:
        out = ()
    elif isinstance(out, Value) or not isinstance(out, (tuple, list)):
        out = (out,)
    block.yields = tuple(out)
    return block, block.yields


@contextlib.contextmanager
def if_(cond: Value):
    """``with if_(cond):`` — statements inside run where ``cond`` holds."""
    block = Block()
    stmt = If(as_value(cond, dtype=T.bool_), block, Block(), ())
    _current().body.append(stmt)
    _open(block)
    try:
        yield
    finally:
        _close()


def if_else(cond: Value, then_fn, else_fn) -> tuple[Value, ...]:
    """``results = cond ? then_fn() : else_fn()`` as structured control flow."""
    cond = as_value(cond, dtype=T.bool_)
    then, ty = _run_block(then_fn)
    orelse, ey = _run_block(else_fn)
    ey = tuple(as_value(e, like=t) for e, t in zip(ey, ty))
    orelse.yields = ey
    if len(ty) != len(ey) or any(a.dtype is not b.dtype for a, b in zip(ty, ey)):
        raise DTypeError("if_else: both branches must yield the same number and types of values")
    results = tuple(Value(v.dtype) for v in ty)
    _current().body.append(If(cond, then, orelse, results))
    return results


def _loop_bounds(start, end, step):
    ref = next((v for v in (start, end, step) if isinstance(v, Value)), None)
    dtype = ref.dtype if ref is not None else T.uint32
    start, end, step = (as_value(v, dtype=dtype) for v in (start, end, step))
    if not (start.dtype is end.dtype is step.dtype) or not start.dtype.is_int:
        raise DTypeError("loop bounds must be integers of one type")
    return start, end, step


@contextlib.contextmanager
def range_(start, end=None, step=1):
    """``with range_(n) as i:`` — a loop without carried values."""
    if end is None:
        start, end = 0, start
    start, end, step = _loop_bounds(start, end, step)
    index = Value(start.dtype)
    body = Block()
    _current().body.append(Loop(start, end, step, index, (), (), body, ()))
    _open(body)
    try:
        yield index
    finally:
        _close()


def loop(start, end, step, inits, body_fn, unroll: bool = True) -> tuple[Value, ...]:
    """``for i in range(start, end, step): carried = body_fn(i, *carried)``; returns the final carried.

    ``unroll=False`` keeps the loop rolled on the device (``Loop.unroll``)."""
    start, end, step = _loop_bounds(start, end, step)
    inits = tuple(inits)
    index = Value(start.dtype)
    carried = tuple(Value(v.dtype) for v in inits)
    body, ys = _run_block(body_fn, index, *carried)
    ys = tuple(as_value(y, like=c) for y, c in zip(ys, carried))
    body.yields = ys
    if len(ys) != len(carried) or any(y.dtype is not c.dtype for y, c in zip(ys, carried)):
        raise DTypeError("loop: the body must yield one value of the same type per carried value")
    results = tuple(Value(v.dtype) for v in inits)
    _current().body.append(Loop(start, end, step, index, inits, carried, body, results, unroll))
    return results


# ---------------------------------------------------------------- kernels


class KernelBuilder:
    """Collects a kernel's declarations and body. Use as a context manager, then ``finish()``."""

    def __init__(self, name: str, local_size=(64, 1, 1), subgroup_size: int | None = None):
        self.name = name
        self.local_size = tuple(int(s) for s in (tuple(local_size) + (1, 1))[:3])
        self.subgroup_size = None if subgroup_size is None else int(subgroup_size)
        self.buffers: list[BufferDecl] = []
        self.params: list[ParamDecl] = []
        self.shared_arrays: list[SharedDecl] = []
        self.body = Block()
        self._values = _KernelValues()

    def _unique(self, name: str) -> None:
        taken = {d.name for d in (*self.buffers, *self.params, *self.shared_arrays)}
        if name in taken:
            raise IRError(f"kernel {self.name!r} already declares {name!r}")

    def buffer(self, name: str, dtype: T.DType, access: str = "read") -> BufferRef:
        if access not in ("read", "write", "readwrite"):
            raise IRError(f"buffer access must be read, write or readwrite, not {access!r}")
        self._unique(name)
        decl = BufferDecl(name, dtype, access)
        self.buffers.append(decl)
        return BufferRef(decl)

    def param(self, name: str, dtype: T.DType) -> Value:
        self._unique(name)
        v = Value(dtype, name)
        self.params.append(ParamDecl(name, dtype, v))
        return v

    def shared(self, name: str, dtype: T.DType, size: int) -> SharedRef:
        self._unique(name)
        decl = SharedDecl(name, dtype, int(size))
        self.shared_arrays.append(decl)
        return SharedRef(decl)

    def __enter__(self) -> KernelBuilder:
        _open(self.body, self._values)  # entered again, it goes on merging with what the body holds
        return self

    def __exit__(self, *exc) -> None:
        _close()

    def finish(self) -> Kernel:
        return Kernel(
            self.name,
            self.local_size,
            tuple(self.buffers),
            tuple(self.params),
            tuple(self.shared_arrays),
            self.body,
            self.subgroup_size,
        )


assert set(SPECS)  # the instruction table is the authority on names used above
