"""Movement ops as index arithmetic: a tensor's view of the buffer below it.

A ``View`` maps a multi-index of its ``shape`` to a linear index ``offset + Σ i·stride``
(strides may be 0 for broadcast dims, negative for flips); its optional ``mask`` marks the
valid region per dim (padding: outside it the value is the pad value, not a load). A
``ViewStack`` composes views: the linear index of an upper view is unravelled by the shape
of the one below (``views[0]`` addresses the buffer itself). reshape, permute, expand,
slice, flip, pad, windows (``Tensor.unfold``, im2col: strides that may overlap) and
``as_strided`` are all cheap edits of the top view (or a new level), so they never copy data.

A view's offset and mask bounds are values, not structure: ``ViewStack.structure`` is what a
kernel's code depends on (shapes, strides, whether the offset is a parameter, which dims the
mask cuts and the lengths they keep), and kernels take the values as parameters, testing their
alignment at run time where vector loads could use it (vkml/kernels/lowering.py), so a slice
or a write at any position runs one kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# kernels/index.py's WIDE_INDEX_EXTENT (a layer above): a view reaching this far from 0 makes its
# kernel index in int64, so the structure says whether it does (tests/test_regions.py pins both equal).
WIDE_REACH = 1 << 31


# Row-major strides and views by shape: every op's result, reshape and contiguity test asks for
# them, a program uses few shapes, and both are immutable, so they are made once per shape. The
# dicts are emptied when full (a loop whose shapes change every step); dict reads and writes
# are atomic, so threads may share them.
_SHAPE_CACHE_ENTRIES = 4096
_STRIDES: dict[tuple[int, ...], tuple[int, ...]] = {}
# View.structure by (shape, strides, offset, mask, below): the same bounds as the shape caches.
_STRUCTURES: dict[tuple, tuple] = {}
_CONTIGUOUS: dict[tuple[int, ...], View] = {}
_CONTIGUOUS_STACKS: dict[tuple[int, ...], ViewStack] = {}
# View.reshape's strides (None: a new layer) by (shape, strides, new shape) of a view that is not row-major.
_RESHAPED: dict[tuple, tuple[int, ...] | None] = {}
_UNDECIDED = object()


def _remember(cache: dict, shape: tuple, value, key=None):
    """``cache[key] = value`` (``key`` defaults to ``shape``) where ``shape`` holds Python ints alone."""
    if type(shape) is tuple and all(
        type(s) is int for s in shape
    ):  # never a key of numpy ints whose results would be theirs
        if len(cache) >= _SHAPE_CACHE_ENTRIES:
            cache.clear()
        cache[shape if key is None else key] = value
    return value


# View.slice's and View.pad's results by (the view's fields, the edit's arguments): a loop slices and pads
# the same views the same way at every step (a convolution's windows, a batch's rows). Views are immutable.
_EDITED: dict[tuple, View] = {}


def _kept_edit(key: tuple, view: View) -> View:
    """``view``, kept under ``key`` where its numbers are Python ints (never numpy ints a later caller
    of equal ints would get back)."""
    return _remember(_EDITED, (*view.shape, *view.strides, view.offset), view, key)


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    found = _STRIDES.get(shape) if type(shape) is tuple else None
    if found is not None:
        return found
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc if s != 1 else 0)
        acc *= s
    return _remember(_STRIDES, shape, tuple(reversed(strides)))


@dataclass(frozen=True)
class View:
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0
    mask: tuple[tuple[int, int], ...] | None = None

    @staticmethod
    def contiguous(shape: tuple[int, ...]) -> View:
        shape = tuple(shape)
        found = _CONTIGUOUS.get(shape)
        if found is not None:
            return found
        return _remember(_CONTIGUOUS, shape, View(shape, contiguous_strides(shape)))

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def is_contiguous(self) -> bool:
        """Maps index i of its shape to buffer position i."""
        return self.offset == 0 and self.mask is None and self.strides == contiguous_strides(self.shape)

    def extent(self) -> tuple[int, int] | None:
        """The lowest and highest position below that a valid index reads; None if none is valid.

        >>> View((4,), (2,), 3).extent()
        (3, 9)
        """
        lo = hi = self.offset
        for d, (size, stride) in enumerate(zip(self.shape, self.strides)):
            first, stop = self.mask[d] if self.mask else (0, size)
            if stop <= first:
                return None
            lo += min(first * stride, (stop - 1) * stride)
            hi += max(first * stride, (stop - 1) * stride)
        return lo, hi

    def reach(self) -> int:
        """One past the farthest position below that the view's strides span from its offset (masks ignored)."""
        return sum((s - 1) * abs(st) for s, st in zip(self.shape, self.strides) if s) + 1

    def shifts(self, below: int | None) -> bool:
        """Whether the offset is a kernel parameter: nonzero, or zero in a view that spans fewer than
        the ``below`` positions of what it views (a slice at 0: another offset of the same shape
        fits). So a slice at 0 has the code of a slice anywhere, while a broadcast, a permutation or
        a pad of a whole tensor (nothing to shift) keeps taking no parameter. ``below`` None: unknown,
        only a nonzero offset is one.
        """
        return self.offset != 0 or (below is not None and self.reach() < below)

    def structure(self, below: int | None = None) -> tuple:
        """What lowering decides from this view over ``below`` positions, without the values of its
        offset and mask bounds (``_structure``), remembered by the view's fields: every realize keys its
        plan by its views' structures, and a loop builds views equal to the last step's.

        The same structure object comes back for equal views, so comparing two plan keys finds most
        views identical without looking inside them. (A key only: views of numpy ints share it with
        views of equal ints.)
        """
        key = (self.shape, self.strides, self.offset, self.mask, below)
        found = _STRUCTURES.get(key)
        if found is None:
            found = self._structure(below)
            if len(_STRUCTURES) >= _SHAPE_CACHE_ENTRIES:  # a loop whose views change every step
                _STRUCTURES.clear()
            _STRUCTURES[key] = found
        return found

    def _structure(self, below: int | None) -> tuple:
        """``structure``, computed.

        Kept: shape and strides; whether the offset is a parameter (``shifts``); for each dim the
        mask cuts, the length it keeps (its lower bound is the value; a dim cut at its start and
        one cut at its end share the code, lowering.py ``_view_level``); whether the view reaches
        ``WIDE_REACH`` (int64 indices). No residue or alignment of a value: where aligned vector
        groups could pass the view, the kernel tests the values' alignment at run time
        (lowering.py ``group_plan``), so a view at any offset has one structure.
        """
        shifts = self.shifts(below)
        if not shifts and self.mask is None:  # the common view: nothing left out (its reach is its strides')
            return (self.shape, self.strides)
        mask = None
        if self.mask:
            mask = tuple(max(0, b - a) if a > 0 or b < s else None for (a, b), s in zip(self.mask, self.shape))
        reach = abs(self.offset) + self.reach()
        return (self.shape, self.strides, shifts, mask, reach >= WIDE_REACH)

    def value_count(self, below: int | None = None) -> int:
        """The parameters ``structure`` leaves out: the offset where it shifts, and the lower bound
        of each dim its mask cuts."""
        count = 1 if self.shifts(below) else 0
        for (lo, hi), s in zip(self.mask or (), self.shape):
            count += lo > 0 or hi < s
        return count

    def permute(self, order: tuple[int, ...]) -> View:
        key = (self.shape, self.strides, self.offset, self.mask, "permute", order)
        found = _EDITED.get(key)
        if found is None:
            mask = tuple(map(self.mask.__getitem__, order)) if self.mask else None
            shape, strides = tuple(map(self.shape.__getitem__, order)), tuple(map(self.strides.__getitem__, order))
            found = _kept_edit(key, View(shape, strides, self.offset, mask))
        return found

    def expand(self, shape: tuple[int, ...]) -> View:
        key = (self.shape, self.strides, self.offset, self.mask, "expand", shape)
        found = _EDITED.get(key)
        if found is None:
            found = _kept_edit(key, self._expand(shape))
        return found

    def _expand(self, shape: tuple[int, ...]) -> View:
        strides = tuple(st if old == new else 0 for old, new, st in zip(self.shape, shape, self.strides))
        mask = None
        if self.mask:
            mask = tuple(
                m if old == new else ((0, new) if m[1] > m[0] else (0, 0))
                for old, new, m in zip(self.shape, shape, self.mask)
            )
        return View(tuple(shape), strides, self.offset, mask)

    def slice(self, starts: tuple[int, ...], stops: tuple[int, ...], steps: tuple[int, ...]) -> View:
        key = (self.shape, self.strides, self.offset, self.mask, tuple(starts), tuple(stops), tuple(steps))
        found = _EDITED.get(key)
        if found is None:
            found = _kept_edit(key, self._slice(starts, stops, steps))
        return found

    def _slice(self, starts: tuple[int, ...], stops: tuple[int, ...], steps: tuple[int, ...]) -> View:
        shape, strides, offset, mask = [], [], self.offset, []
        for d, (a, b, st) in enumerate(zip(starts, stops, steps)):
            n = max(0, -(-(b - a) // st))
            shape.append(n)
            strides.append(self.strides[d] * st if n > 1 else 0)
            offset += a * self.strides[d] if n > 0 else 0
            if self.mask:
                lo, hi = self.mask[d]
                new_lo = max(0, -(-(lo - a) // st))
                new_hi = min(n, max(0, -(-(hi - a) // st)))
                mask.append((new_lo, max(new_lo, new_hi)))
        return View(tuple(shape), tuple(strides), offset, tuple(mask) if self.mask else None)

    def flip(self, dims: tuple[int, ...]) -> View:
        strides, offset = list(self.strides), self.offset
        mask = list(self.mask) if self.mask else None
        for d in dims:
            if self.shape[d] > 1:
                offset += (self.shape[d] - 1) * strides[d]
                strides[d] = -strides[d]
            if mask:
                lo, hi = mask[d]
                mask[d] = (self.shape[d] - hi, self.shape[d] - lo)
        return View(self.shape, tuple(strides), offset, tuple(mask) if mask else None)

    def pad(self, pads: tuple[tuple[int, int], ...]) -> View:
        key = (self.shape, self.strides, self.offset, self.mask, tuple(pads))
        found = _EDITED.get(key)
        if found is None:
            found = _kept_edit(key, self._pad(pads))
        return found

    def _pad(self, pads: tuple[tuple[int, int], ...]) -> View:
        shape, offset, mask = [], self.offset, []
        for d, (before, after) in enumerate(pads):
            shape.append(self.shape[d] + before + after)
            offset -= before * self.strides[d]
            lo, hi = self.mask[d] if self.mask else (0, self.shape[d])
            mask.append((lo + before, hi + before))
        if all(p == (0, 0) for p in pads):
            return self
        return View(tuple(shape), self.strides, offset, tuple(mask))

    def window(self, dim: int, size: int, step: int, dilation: int = 1) -> View | None:
        """Overlapping windows along ``dim`` (PyTorch's ``Tensor.unfold`` with a dilation): ``dim``
        becomes the window count ``n = (length - dilation·(size - 1) - 1) // step + 1`` and a last dim
        of ``size`` is appended; element (..., i, ..., k) reads position ``i·step + k·dilation`` of
        ``dim``. Strides only (windows may overlap: a view is read, never written, by its kernel).
        None where the mask cuts ``dim`` (validity along it is no box in (i, k)): ``ViewStack.window``
        then puts the windows on a level of their own.
        """
        length, stride = self.shape[dim], self.strides[dim]
        if self.mask and self.mask[dim] != (0, length):
            return None
        n = (length - dilation * (size - 1) - 1) // step + 1
        shape = self.shape[:dim] + (n,) + self.shape[dim + 1 :] + (size,)
        # size-1 dims keep stride 0, as every other edit makes them (structure keys compare strides)
        strides = self.strides[:dim] + (stride * step if n > 1 else 0,) + self.strides[dim + 1 :]
        strides += (stride * dilation if size > 1 else 0,)
        mask = None
        if self.mask:
            mask = self.mask[:dim] + ((0, n),) + self.mask[dim + 1 :] + ((0, size),)
        return View(shape, strides, self.offset, mask)

    def reshape(self, shape: tuple[int, ...]) -> View | None:
        """The same view under a new shape without a new layer, or None if impossible."""
        if self.mask is not None:
            return None
        if self.is_contiguous:
            return View.contiguous(shape)
        shape = tuple(shape)
        key = (self.shape, self.strides, shape)
        strides = _RESHAPED.get(key, _UNDECIDED)
        if strides is _UNDECIDED:
            strides = self._reshaped_strides(shape)
            _remember(_RESHAPED, shape + self.shape + self.strides, strides, key)
        return None if strides is None else View(shape, strides, self.offset, None)

    def _reshaped_strides(self, shape: tuple[int, ...]) -> tuple[int, ...] | None:
        """``reshape``'s strides for a view that is not row-major, or None if it needs a new layer."""
        # Drop size-1 dims, then split/merge runs of dims whose strides chain (numpy's rule).
        old = [(s, st) for s, st in zip(self.shape, self.strides) if s != 1]
        new_strides, i = [], 0
        shape = tuple(shape)
        j = 0
        while j < len(shape):
            if shape[j] == 1:
                new_strides.append(0)
                j += 1
                continue
            if i >= len(old):
                return None
            # gather old dims until their product matches gathered new dims
            o_prod, n_prod = old[i][0], shape[j]
            oi, nj = [i], [j]
            while o_prod != n_prod:
                if o_prod < n_prod:
                    i += 1
                    if i >= len(old):
                        return None
                    o_prod *= old[i][0]
                    oi.append(i)
                else:
                    j += 1
                    if j >= len(shape):
                        return None
                    n_prod *= shape[j]
                    nj.append(j)
            for a, b in zip(oi, oi[1:]):  # the old run must be contiguous within itself
                if old[a][1] != old[b][1] * old[b][0]:
                    return None
            stride = old[oi[-1]][1]
            run = []
            for k in reversed(nj):
                run.append(stride if shape[k] != 1 else 0)
                stride *= shape[k]
            new_strides.extend(reversed(run))
            i += 1
            j = nj[-1] + 1
        if i != len(old):
            return None
        return tuple(new_strides)


@dataclass(frozen=True)
class ViewStack:
    """Views from the buffer (first) to the tensor (last)."""

    views: tuple[View, ...]

    def __hash__(self) -> int:
        # Every realize hashes its plan-cache key, which holds each view node's stack: computed
        # once per stack (it is frozen; broadcasts of scalars share one stack per shape).
        found = self.__dict__.get("_hash")
        if found is None:
            found = hash(self.views)
            object.__setattr__(self, "_hash", found)
        return found

    @staticmethod
    def contiguous(shape: tuple[int, ...]) -> ViewStack:
        # One stack per shape, as View.contiguous keeps one view: every view of a node that is no view
        # starts from it (its caches of structure and hash are shared with it)
        found = _CONTIGUOUS_STACKS.get(shape) if type(shape) is tuple else None
        if found is not None:
            return found
        shape = tuple(shape)
        return _remember(_CONTIGUOUS_STACKS, shape, ViewStack((View.contiguous(shape),)))

    def below(self, level: int, source: int | None) -> int | None:
        """How many positions level ``level`` views: the level below's, or ``source`` (the viewed node's numel)."""
        return self.views[level - 1].numel if level else source

    def structure(self, source: int | None = None) -> tuple:
        """``View.structure`` of each level over ``source`` positions (the viewed node's numel): the
        stack as the plan and kernel caches key it (they key the viewed node's shape too)."""
        # The last (source, structure), in the instance dict directly (no object.__setattr__ call): every view
        # node's structure id reads it when the node is built, most stacks are new, and a stack is viewed
        # over one source (a stack over two is computed again, as right).
        fields = self.__dict__
        last = fields.get("_structure")
        if last is not None and last[0] == source:
            return last[1]
        views = self.views
        if len(views) == 1:
            found = (views[0].structure(source),)
        else:
            found = tuple([v.structure(self.below(k, source)) for k, v in enumerate(views)])
        fields["_structure"] = (source, found)
        return found

    def value_count(self, source: int | None = None) -> int:
        """Kernel parameters the stack's values take (``View.value_count`` summed)."""
        cache = self.__dict__.get("_value_count")
        if cache is None:
            cache = {}
            object.__setattr__(self, "_value_count", cache)
        found = cache.get(source)
        if found is None:
            found = cache[source] = sum([v.value_count(self.below(k, source)) for k, v in enumerate(self.views)])
        return found

    @property
    def shape(self) -> tuple[int, ...]:
        return self.views[-1].shape

    @property
    def top(self) -> View:
        return self.views[-1]

    @property
    def is_contiguous(self) -> bool:
        return len(self.views) == 1 and self.views[0].is_contiguous

    def _replace_top(self, view: View) -> ViewStack:
        return ViewStack(self.views[:-1] + (view,))

    def reshape(self, shape: tuple[int, ...]) -> ViewStack:
        merged = self.top.reshape(shape)
        if merged is not None:
            return self._replace_top(merged)
        return ViewStack(self.views + (View.contiguous(tuple(shape)),))

    def permute(self, order) -> ViewStack:
        return self._replace_top(self.top.permute(tuple(order)))

    def expand(self, shape) -> ViewStack:
        return self._replace_top(self.top.expand(tuple(shape)))

    def slice(self, starts, stops, steps) -> ViewStack:
        return self._replace_top(self.top.slice(tuple(starts), tuple(stops), tuple(steps)))

    def flip(self, dims) -> ViewStack:
        return self._replace_top(self.top.flip(tuple(dims)))

    def pad(self, pads) -> ViewStack:
        return self._replace_top(self.top.pad(tuple(pads)))

    def window(self, dim: int, size: int, step: int, dilation: int = 1) -> ViewStack:
        """``View.window`` of the top view, or of a new row-major level over it where its mask cuts ``dim``."""
        found = self.top.window(dim, size, step, dilation)
        if found is not None:
            return self._replace_top(found)
        return ViewStack(self.views + (View.contiguous(self.shape).window(dim, size, step, dilation),))

    def strided(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> ViewStack:
        """PyTorch's ``as_strided`` over this stack's row-major order: element ``i`` reads position
        ``offset + Σ i_d·strides[d]`` of the stack's elements taken row-major (the caller checks the
        bounds). Replaces a top view that is row-major itself, else adds a level."""
        strides = tuple(st if s != 1 else 0 for s, st in zip(shape, strides))
        view = View(tuple(shape), strides, offset)
        if self.top.is_contiguous:
            return self._replace_top(view)
        return ViewStack(self.views + (view,))

    def then(self, upper: ViewStack) -> ViewStack:
        """This stack followed by ``upper`` (whose bottom addresses this stack's shape)."""
        first = upper.views[0]
        if first.is_contiguous and first.shape == self.shape:
            return ViewStack(self.views + upper.views[1:])
        if first.is_contiguous:
            return ViewStack(self.reshape(first.shape).views + upper.views[1:])
        return ViewStack(self.views + upper.views)
