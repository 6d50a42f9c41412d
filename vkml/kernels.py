"""Lowering: turn one fused group of graph nodes into IR kernel templates.

A template is a kernel plus the *roles* of its bindings (which leaf, output or temporary
each buffer is; which constant each parameter is), so the scheduler can cache it by the
group's structure and bind new buffers and values on every realize without rebuilding IR.

The elementwise template (here) runs one invocation per output element: it computes the
root's expression at its index, loading realized leaves through their views (index
arithmetic, no copies). Reductions are in ``kernels_reduce.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .graph import Node
from .ir import builder as B
from .ir import types as T
from .ir.core import Kernel, Value
from .ops import mathlib as M
from .ops.cast import cast_value, round_to_f16
from .ops.random import random_value
from .ops.registry import REGISTRY

ELEMENTWISE_LOCAL_SIZE = 64
MAX_GRID_X = 65535
_U32 = 1 << 32


def _u32(v: int) -> Value:
    return B.const(v % _U32, T.uint32)


def fold_grid(workgroups: int) -> tuple[int, int, int]:
    """Spread a 1-D count of workgroups over x and y (x is limited to 65535 on many devices)."""
    x = max(1, min(workgroups, MAX_GRID_X))
    return (x, max(1, -(-workgroups // x)), 1)


def pow2ceil(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


PARAM_BUDGET_NBYTES = 64  # scalars beyond this become IR constants (push constants can be 128 bytes in all)


def param_dtype(dtype: T.DType) -> T.DType:
    """Parameters travel as push constants: float16 as float32, bool as uint32."""
    return {T.float16: T.float32, T.bool_: T.uint32}.get(dtype, dtype)


@dataclass
class KernelTemplate:
    """A kernel and the roles of its buffers and parameters (see ``Lowering``)."""

    kernel: Kernel
    grid: tuple[int, int, int]
    buffers: dict[str, tuple]
    params: dict[str, object]


@dataclass
class GroupTemplate:
    """The kernels of one fused group, in order, and the temporaries they share."""

    kernels: list[KernelTemplate]
    temps: list[tuple[T.DType, int]] = field(default_factory=list)


class Index:
    """A position in a node's shape: a linear index and/or a multi-index, and where it is valid."""

    def __init__(self, shape, lin: Value | None = None, multi: tuple | None = None, valid: Value | None = None):
        self.shape, self._lin, self._multi, self.valid = tuple(shape), lin, multi, valid

    @property
    def lin(self) -> Value:
        if self._lin is None:
            acc = None
            for i, st in zip(self._multi, _strides(self.shape)):
                if st:
                    term = i if st == 1 else i * _u32(st)
                    acc = term if acc is None else acc + term
            self._lin = acc if acc is not None else _u32(0)
        return self._lin

    @property
    def multi(self) -> tuple:
        if self._multi is None:
            self._multi = unravel(self._lin, self.shape)
        return self._multi


def _strides(shape) -> tuple[int, ...]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc if s != 1 else 0)
        acc *= s
    return tuple(reversed(out))


def unravel(lin: Value, shape) -> tuple:
    """Multi-index of linear index ``lin`` in ``shape`` (row-major); size-1 dims give constant 0."""
    out, rest, dims_left = [], lin, [d for d, s in enumerate(shape) if s != 1]
    for d in reversed(range(len(shape))):
        s = shape[d]
        if s == 1:
            out.append(None)
            continue
        dims_left.pop()
        if not dims_left:
            out.append(rest)
            continue
        out.append(rest % _u32(s))
        rest = rest / _u32(s)
    zero = None
    result = []
    for v in reversed(out):
        if v is None:
            zero = _u32(0) if zero is None else zero
            v = zero
        result.append(v)
    return tuple(result)


def _and(a: Value | None, b: Value | None) -> Value | None:
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def _view_index(stack, idx: Index) -> tuple[Value, Value | None]:
    """Linear index into the source's logical shape, and validity, for position ``idx`` of a view."""
    multi, valid = idx.multi, idx.valid
    lin = None
    for k in reversed(range(len(stack.views))):
        view = stack.views[k]
        if view.mask:
            for i, (lo, hi), s in zip(multi, view.mask, view.shape):
                if lo > 0:
                    valid = _and(valid, i >= _u32(lo))
                if hi < s:
                    valid = _and(valid, i < _u32(hi))
        lin = _u32(view.offset) if view.offset else None
        for i, st in zip(multi, view.strides):
            if st:
                term = i if st == 1 else i * _u32(st)
                lin = term if lin is None else lin + term
        if lin is None:
            lin = _u32(0)
        if k:
            multi = unravel(lin, stack.views[k - 1].shape)
    return lin, valid


class Lowering:
    """Builds one kernel: binds leaves as read buffers and constants as parameters, recording roles."""

    def __init__(self, name: str, local_size, leaves, baked=frozenset()):
        self.kb = B.KernelBuilder(name, local_size)
        self.leaves = leaves  # ids of nodes computed by earlier kernels of this realize: loaded, not inlined
        self.baked = baked  # ids of constants emitted as IR constants instead of parameters
        self.roles: dict[str, tuple] = {}  # binding name -> ("leaf", node) | ("out", node) | ("temp", j)
        self.param_roles: dict[str, Node] = {}  # parameter name -> const node
        self._leaf_refs: dict[int, B.BufferRef] = {}
        self._params: dict[int, Value] = {}
        self._memo: dict[tuple[int, Index], Value] = {}  # holds the Index: ids of dead ones get reused
        self.fused: dict[int, Value] = {}  # a fused reduce node -> its result in this kernel

    def bind_buffer(self, dtype: T.DType, access: str, prefix: str, role: tuple) -> B.BufferRef:
        name = f"{prefix}{len(self.roles)}"
        self.roles[name] = role
        return self.kb.buffer(name, dtype, access)

    def _leaf(self, node: Node) -> B.BufferRef:
        ref = self._leaf_refs.get(id(node))
        if ref is None:
            ref = self._leaf_refs[id(node)] = self.bind_buffer(node.dtype, "read", "in", ("leaf", node))
        return ref

    def _param(self, node: Node) -> Value:
        if id(node) in self.baked:  # past the parameter budget: the value is part of the kernel
            dtype = param_dtype(node.dtype) if node.dtype is not T.bool_ else T.bool_
            value = dtype.np.type(node.arg) if dtype.is_float else node.arg  # rounded as a parameter would be
            return B.const(value, dtype)
        v = self._params.get(id(node))
        if v is None:
            name = f"s{len(self._params)}"
            self.param_roles[name] = node
            v = self._params[id(node)] = self.kb.param(name, param_dtype(node.dtype))
        # A bool travels as 0/1; compare where it is used (a value made here must dominate every use).
        return B.ne(v, _u32(0)) if node.dtype is T.bool_ else v

    def template(self, grid) -> KernelTemplate:
        return KernelTemplate(self.kb.finish(), tuple(grid), dict(self.roles), dict(self.param_roles))

    def load(self, ref: B.BufferRef, dtype: T.DType, index: Value) -> Value:
        v = ref[index]
        return B.convert(v, T.float32) if dtype is T.float16 else v

    def store(self, ref: B.BufferRef, dtype: T.DType, index: Value, value: Value) -> None:
        ref[index] = M.f32_to_f16(value) if dtype is T.float16 else value

    def value(self, node: Node, idx: Index) -> Value:
        """The compute-representation value of ``node`` at ``idx`` (memoised per index)."""
        key = (id(node), idx)
        if key not in self._memo:
            self._memo[key] = self._compute(node, idx)
        return self._memo[key]

    def _compute(self, node: Node, idx: Index) -> Value:
        if id(node) in self.fused:
            return self.fused[id(node)]
        if node.realized or id(node) in self.leaves:
            lin = idx.lin if idx.valid is None else B.select(idx.valid, idx.lin, _u32(0))
            return self.load(self._leaf(node), node.dtype, lin)
        op = node.op
        if op == "const":
            return self._param(node)
        if op == "view":
            src = node.srcs[0]
            lin, valid = _view_index(node.arg, idx)
            inner = self.value(src, Index(src.shape, lin=lin, valid=valid))
            if valid is not None and valid is not idx.valid:
                zero = B.const(0.0 if inner.dtype.is_float else (False if inner.dtype is T.bool_ else 0), inner.dtype)
                inner = B.select(valid, inner, zero)
            return inner
        if op == "cast":
            src = node.srcs[0]
            return cast_value(self.value(src, idx), src.dtype, node.dtype)
        if op == "elementwise":
            name, cdtype = node.arg
            args = [cast_value(self.value(s, idx), s.dtype, cdtype) for s in node.srcs]
            if name == "where":
                args[0] = cast_value(self.value(node.srcs[0], idx), node.srcs[0].dtype, T.bool_)
            out = REGISTRY[name].body(*args)
            if node.dtype is T.float16 and cdtype is T.float16:
                out = round_to_f16(out)
            return out
        if op == "cat":
            return self._cat(node, idx)
        if op == "random":  # sources: key and call-offset constants (int32 bits), so they travel as parameters
            words = [B.bitcast(self.value(s, idx), T.uint32) for s in node.srcs]
            return random_value(node.arg, idx.lin, *words)
        raise AssertionError(f"cannot inline {node!r}")

    def _cat(self, node: Node, idx: Index) -> Value:
        dim, multi, result, start = node.arg, idx.multi, None, 0
        for src in node.srcs:
            size = src.shape[dim]
            if size == 0:
                continue
            i = multi[dim]
            inside = (i >= _u32(start)) & (i < _u32(start + size))
            local = B.select(inside, i - _u32(start), _u32(0))
            sub = Index(src.shape, multi=multi[:dim] + (local,) + multi[dim + 1 :], valid=_and(idx.valid, inside))
            v = self.value(src, sub)
            result = v if result is None else B.select(inside, v, result)
            start += size
        return result


def kernel_name(root: Node, prefix: str) -> str:
    names, stack, seen = [], [root], set()
    while stack and len(names) < 4:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.op in ("elementwise", "reduce"):
            names.append(n.arg[0])
        elif n.op == "cast":
            names.append("to_" + n.dtype.short)
        stack.extend(n.srcs)
    shape = "x".join(str(s) for s in root.shape) or "scalar"
    return "_".join([prefix, *names, shape])


def lower_elementwise(root: Node, leaves, baked=frozenset()) -> GroupTemplate:
    n = root.numel
    L = Lowering(kernel_name(root, "E"), (ELEMENTWISE_LOCAL_SIZE, 1, 1), leaves, baked)
    workgroups = -(-n // ELEMENTWISE_LOCAL_SIZE)
    grid = fold_grid(workgroups)
    out_ref = L.bind_buffer(root.dtype, "write", "out", ("out", root))
    with L.kb:
        gid = linear_workgroup(grid) * _u32(ELEMENTWISE_LOCAL_SIZE) + B.local_id(0)
        with B.if_(gid < _u32(n)):
            v = L.value(root, Index(root.shape, lin=gid))
            L.store(out_ref, root.dtype, gid, v)
    return GroupTemplate([L.template(grid)])


def linear_workgroup(grid) -> Value:
    """The workgroup's index in a grid folded by ``fold_grid``."""
    if grid[1] > 1:
        return B.workgroup_id(1) * _u32(grid[0]) + B.workgroup_id(0)
    return B.workgroup_id(0)
