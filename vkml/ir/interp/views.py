"""Strided views for the compiled interpreter's loads and stores (see ``interp_compiled``).

The compiler writes every integer value as an affine form: a dict from terms to integer
coefficients, exact modulo 2^bits of the value's type. The terms are the constant ``ONE``,
``local_id(0)`` (``LOCAL``), ``workgroup_id(0)`` (``GROUP``), ``local_id(0) // c`` and
``local_id(0) % c`` (``(DIV, c)``, ``(MOD, c)``, for c dividing the workgroup size) and
values of the kernel, which must turn out uniform over the chunk at run time. An access
whose index has such a form touches, for the chunk's lanes in order, the elements of a
(groups, *lane axes) strided view of its buffer or shared array: loads copy the view,
stores assign to it, both without a per-lane gather or scatter. Whatever the view cannot
promise (a wrapping index, one out of range, colliding stores) goes to the plain path.
"""

from __future__ import annotations

import math

import numpy as np

from ..core import Value
from ..instructions import VECTOR_WIDTH

ONE, LOCAL, GROUP = "one", "local", "group"
DIV, MOD = "div", "mod"


class Access:
    """One load or store's target and its index as an affine form (element = scale * index + offset)."""

    def __init__(self, program, op: str, name: str, index: Value, component: int | None):
        self.op = op
        self.name = name
        self.shared = op.startswith("shared")
        self.vector = component is not None
        self.scale, self.offset = (VECTOR_WIDTH, component) if self.vector else (1, 0)
        dtype = index.dtype
        self.bits = 8 * dtype.nbytes
        self.signed = dtype.np.kind == "i"
        form = program.forms.get(index, {index: 1})
        self.start = form.get(ONE, 0)
        self.per_group = form.get(GROUP, 0)
        self.uniform = [(program._slot(k), c) for k, c in form.items() if isinstance(k, Value)]
        axes = lane_axes(form, math.prod(program.local_size))  # (extent, coefficient) per lane axis
        # What does not change between chunks: the lane axes' reach and strides (in elements).
        self.usable = axes is not None and all(coef >= 0 for _, coef in axes) and self.per_group >= 0
        axes = axes or ()
        self.local_extents = tuple(extent for extent, _ in axes)
        self.local_reach = sum(coef * (extent - 1) for extent, coef in axes)
        self.local_strides = tuple(self.scale * coef for _, coef in axes)
        self.group_stride = self.scale * self.per_group + (program.shared_sizes[name] if self.shared else 0)
        self.shared_size = program.shared_sizes.get(name, 0)
        # One lane axis whose workgroups follow each other at its own stride: the view is a 1-D slice.
        self.sliced = len(axes) == 1 and self.local_strides[0] > 0
        self.sliced = self.sliced and self.group_stride == self.local_extents[0] * self.local_strides[0]
        self.modulus = 1 << self.bits
        self.low_int, self.high_int = (
            (-(self.modulus >> 1), (self.modulus >> 1) - 1) if self.signed else (0, self.modulus - 1)
        )

    def view(self, st, v: list) -> np.ndarray | None:
        """Every lane's element as a (groups, *local axes) view of the target, or None: take the slow path.

        The view covers inactive lanes too, so it needs every lane's index in range (where one
        is not, the slow path checks the active lanes alone and raises if one of them is out).
        """
        if not self.usable:
            return None
        start = self.start
        for slot, coef in self.uniform:
            value = v[slot]
            if value is None or value.shape[0] != 1:
                return None
            start += coef * int(value[0])
        if self.per_group:
            if not st.groups_1d:
                return None
            start += self.per_group * st.first_group
        # The index is start + sum(coefficient * position) modulo 2^bits: exact where no corner wraps
        # (every coefficient is non-negative, so start is the lowest corner).
        start %= self.modulus
        if start > self.high_int:
            start -= self.modulus
        highest = start + self.local_reach + self.per_group * (st.groups - 1)
        if start < self.low_int or highest > self.high_int:
            return None
        target = st.memory.shared[self.name] if self.shared else st.memory.buffers[self.name]
        length = self.shared_size if self.shared else target.shape[0]
        if self.scale * start + self.offset < 0 or self.scale * highest + self.offset >= length:
            return None  # the slow path raises for an index out of range
        if not target.flags.c_contiguous:
            return None
        first = self.scale * start + self.offset
        if self.sliced:  # slicing and reshaping: several times cheaper than np.ndarray over a buffer
            step = self.local_strides[0]
            lanes = st.groups * self.local_extents[0]
            return target[first : first + step * (lanes - 1) + 1 : step].reshape(st.groups, self.local_extents[0])
        size = target.itemsize
        return np.ndarray(
            (st.groups, *self.local_extents),
            target.dtype,
            buffer=target,
            offset=first * size,
            strides=(self.group_stride * size, *(s * size for s in self.local_strides)),
        )

    def inactive(self, st) -> np.ndarray:
        """What the plain interpreter's masked load gives an inactive lane: element 0 (of its group's copy)."""
        if not self.shared:
            return st.memory.buffers[self.name][:1]
        target = st.memory.shared[self.name]
        firsts = np.ndarray(
            (st.groups, st.group_size), target.dtype, buffer=target, strides=(self.shared_size * target.itemsize, 0)
        )
        return firsts.reshape(-1)

    def distinct(self, view: np.ndarray) -> bool:
        """Whether no two lanes share an address, so a store's order among them cannot matter.

        Sufficient test: with the axes sorted by stride, each stride passes the reach of all smaller ones.
        """
        reach = 0  # the furthest address step within the axes of smaller stride
        for stride, extent in sorted(zip(view.strides, view.shape)):
            if extent > 1:
                if stride <= reach:
                    return False
                reach += stride * (extent - 1)
        return True

    def slow_index(self, index: np.ndarray, component: int | None) -> np.ndarray:
        return index if component is None else index.astype(np.int64) * VECTOR_WIDTH + component


def lane_axes(form: dict, group_size: int) -> tuple | None:
    """The lane axes of one workgroup and the form's coefficient on each, or None if they do not fit.

    ``local_id(0)`` is one axis of ``group_size`` lanes; a form that uses ``local // c`` or
    ``local % c`` splits it into (group_size / c, c), with ``local = c * (local // c) + local % c``.
    """
    splits = {k[1] for k in form if isinstance(k, tuple)}
    local = form.get(LOCAL, 0)
    if not splits:
        return ((group_size, local),)
    if len(splits) > 1:
        return None
    (c,) = splits
    return ((group_size // c, form.get((DIV, c), 0) + c * local), (c, form.get((MOD, c), 0) + local))


# ---------------------------------------------------------------- index values left uncomputed


PURE_TERMS = (ONE, LOCAL, GROUP)


def is_lane_form(form: dict) -> bool:
    """Whether ``form`` is a function of the lane alone (no value of the kernel among its terms)."""
    return all(k in PURE_TERMS or isinstance(k, tuple) for k in form)


class Deferred:
    """A slot's stand-in for an integer index value known only by its lane form (``Program.deferred``).

    Loads and stores reach their elements through the form (a view); only a slow path, or a
    comparison the form's range does not decide, computes the lanes (``materialize``).
    """

    __slots__ = ("form", "dtype")

    def __init__(self, form: dict, dtype: np.dtype):
        self.form, self.dtype = form, np.dtype(dtype)

    def materialize(self, st) -> np.ndarray:
        """Every lane's value: the form evaluated modulo 2^64, then narrowed as a conversion would (mod 2^bits)."""
        mod64 = 1 << 64
        total = np.full(1, self.form.get(ONE, 0) % mod64, dtype=np.uint64)
        local = st.invocation_id("local_id", 0)
        for term, coef in self.form.items():
            if term == ONE:
                continue
            if term == LOCAL:
                lanes = local
            elif term == GROUP:
                lanes = st.invocation_id("workgroup_id", 0)
            else:
                lanes = local // np.uint32(term[1]) if term[0] == DIV else local % np.uint32(term[1])
            total = total + lanes.astype(np.uint64) * np.uint64(coef % mod64)  # uint64 wraps modulo 2^64
        return total.astype(self.dtype)

    def bounds(self, st, group_size: int) -> tuple[int, int] | None:
        """The lowest and highest value over the chunk's lanes, or None where they may wrap or are unknown."""
        axes = lane_axes(self.form, group_size)
        per_group = self.form.get(GROUP, 0)
        if axes is None or (per_group and not st.groups_1d):
            return None
        low = high = self.form.get(ONE, 0) + per_group * st.first_group
        for extent, coef in ((st.groups, per_group), *axes):
            span = coef * (extent - 1)
            low, high = low + min(0, span), high + max(0, span)
        bits = 8 * self.dtype.itemsize
        modulus = 1 << bits
        least = -(modulus >> 1) if self.dtype.kind == "i" else 0
        shift = (low - least) % modulus + least - low  # a multiple of 2^bits that moves low into range
        if high + shift > least + modulus - 1:
            return None  # the lanes wrap around: some value differs from the form's integer
        return low + shift, high + shift


_ALWAYS = {"lt": lambda lo, hi, c: hi < c, "le": lambda lo, hi, c: hi <= c}
_ALWAYS |= {"gt": lambda lo, hi, c: lo > c, "ge": lambda lo, hi, c: lo >= c}
_NEVER = {"lt": _ALWAYS["ge"], "le": _ALWAYS["gt"], "gt": _ALWAYS["le"], "ge": _ALWAYS["lt"]}
SWAPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def decided(op: str, bounds: tuple[int, int] | None, constant: int) -> bool | None:
    """``form op constant`` on every lane of the chunk (True), on none (False), or undecided (None)."""
    if bounds is None:
        return None
    if _ALWAYS[op](*bounds, constant):
        return True
    if _NEVER[op](*bounds, constant):
        return False
    return None
