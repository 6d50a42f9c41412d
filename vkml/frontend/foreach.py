"""PyTorch's ``torch._foreach_*`` ops: one op applied to each tensor of a list.

EMA updates (``torch._foreach_lerp_(ema_params, params, 1 - decay)``), optimizers and gradient
utilities call them.

vkml records each tensor's op in the lazy graph, so the ops of one call fuse with whatever reads
their results; there is no multi-tensor kernel to choose. The arguments and errors are PyTorch's:
``self`` a list (or tuple) of at least one tensor; the other operand a number, a list of numbers
(one per tensor), a list of tensors (one per tensor) or, for add, sub, mul and div, one tensor;
``alpha`` only with tensor operands. The out-of-place forms return a tuple of new tensors; the
in-place forms (``_`` suffix) write each tensor, with the in-place method's dtype check, and
return the list they were given.

>>> import vkml
>>> ema = [vkml.tensor([0.0, 0.0]), vkml.tensor([1.0])]
>>> vkml._foreach_lerp_(ema, [vkml.tensor([1.0, 2.0]), vkml.tensor([3.0])], 0.5) is ema
True
>>> [t.tolist() for t in ema]
[[0.5, 1.0], [2.0]]
>>> [round(n.item(), 4) for n in vkml._foreach_norm(ema)]
[1.118, 2.0]
"""

from __future__ import annotations

from numbers import Number

from ..tensor import Tensor
from . import mutation, statistics
from . import operators as F
from .exports import Export

UNARY = (
    "abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log log10 log1p log2 neg reciprocal "
    "round rsqrt sigmoid sign sin sinh sqrt tan tanh trunc"
).split()
# op -> whether one tensor (not a list) may stand for every tensor's operand, and whether alpha is taken
BINARY = {
    "add": (True, True),
    "sub": (True, True),
    "mul": (True, False),
    "div": (True, False),
    "maximum": (False, False),
    "minimum": (False, False),
    "clamp_min": (False, False),
    "clamp_max": (False, False),
    "pow": (False, False),
}


def _tensors(name: str, tensors, argument: str = "self", position: int = 1) -> list[Tensor]:
    if not isinstance(tensors, list | tuple) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(
            f"{name}(): argument '{argument}' (position {position}) must be tuple of Tensors, "
            f"not {type(tensors).__name__}"
        )
    if not tensors:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return list(tensors)


def _spread(name: str, n: int, other, one_tensor: bool, argument: str = "other", position: int = 2) -> list:
    """``other`` as one operand per tensor: a list checked for length, a number or tensor repeated."""
    if isinstance(other, list | tuple):
        if other and all(isinstance(o, Tensor) for o in other):
            if len(other) != n:
                raise RuntimeError(f"Tensor lists must have the same number of tensors, got {n} and {len(other)}")
            return list(other)
        if all(isinstance(o, Number) for o in other):
            if len(other) != n:
                raise RuntimeError("Tensor list must have same number of elements as scalar list.")
            return list(other)
    elif isinstance(other, Number) or (isinstance(other, Tensor) and one_tensor):
        return [other] * n
    raise TypeError(
        f"{name}(): argument '{argument}' (position {position}) must be a Number, a tuple of Scalars or a tuple of "
        f"Tensors{', or a Tensor' if one_tensor else ''}, not {type(other).__name__}"
    )


def _scalars(name: str, n: int, value, argument: str) -> list:
    """addcmul's and addcdiv's ``scalars``: a number, a list of numbers, or a 1-D tensor of them, one per tensor."""
    if isinstance(value, Tensor):
        if value.dim() != 1 or value.numel() != n:
            raise RuntimeError("Expected scalars to be a 1-D tensor with one element per tensor of the list.")
        return value.tolist()
    return _spread(name, n, value, one_tensor=False, argument=argument, position=4)


def _write(t: Tensor, name: str, result) -> Tensor:
    """``t`` overwritten by ``result`` (computed from it), with the in-place methods' shape and dtype checks."""
    return mutation.inplace(t, name, lambda _old: result)


def _unary(op: str, inplace: bool):
    name = f"_foreach_{op}{'_' if inplace else ''}"

    def fn(self):
        tensors = _tensors(name, self)
        if inplace:
            for t in tensors:
                getattr(t, op + "_")()
            return self
        return tuple(getattr(t, op)() for t in tensors)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``[x.{op}() for x in self]``{' written into each tensor' if inplace else ''}, as PyTorch's {name}."
    return fn


def _binary(op: str, inplace: bool):
    name = f"_foreach_{op}{'_' if inplace else ''}"
    one_tensor, takes_alpha = BINARY[op]

    def fn(self, other, *, alpha=None):
        if op == "pow" and not inplace and isinstance(self, Number):  # _foreach_pow(2.0, exponents)
            return tuple(F.pow(self, t) for t in _tensors(name, other, "exponent", 2))
        tensors = _tensors(name, self)
        others = _spread(name, len(tensors), other, one_tensor)
        if alpha is not None and not (takes_alpha and isinstance(others[0], Tensor)):
            raise TypeError(f"{name}(): alpha is taken only with a Tensor or a tuple of Tensors as other")
        kwargs = {} if alpha is None else {"alpha": alpha}
        if op in ("maximum", "minimum") and not isinstance(others[0], Tensor):
            results = [F.clamp(t, min=o) if op == "maximum" else F.clamp(t, max=o) for t, o in zip(tensors, others)]
        else:
            results = None
        if inplace:
            for i, (t, o) in enumerate(zip(tensors, others)):
                if results is not None:
                    _write(t, name, results[i])
                elif hasattr(t, op + "_"):
                    getattr(t, op + "_")(o, **kwargs)
                else:
                    _write(t, name, getattr(F, op)(t, o))
            return self
        if results is not None:
            return tuple(results)
        return tuple(getattr(t, op)(o, **kwargs) for t, o in zip(tensors, others))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"``[x.{op}(o) for x, o in zip(self, other)]``{' written into each tensor' if inplace else ''}, "
        f"as PyTorch's {name}: ``other`` a number, a list of numbers or tensors"
        f"{' or one tensor' if one_tensor else ''}."
    )
    return fn


def _lerp(inplace: bool):
    name = f"_foreach_lerp{'_' if inplace else ''}"

    def fn(self, tensors1, weight):
        tensors = _tensors(name, self)
        ends = _tensors(name, tensors1, "tensors1", 2)
        if len(ends) != len(tensors):
            raise RuntimeError(f"Tensor lists must have the same number of tensors, got {len(tensors)} and {len(ends)}")
        weights = _spread(name, len(tensors), weight, one_tensor=False, argument="weight", position=3)
        if inplace:
            for t, e, w in zip(tensors, ends, weights):
                t.lerp_(e, w)
            return self
        return tuple(t.lerp(e, w) for t, e, w in zip(tensors, ends, weights))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``self + weight * (tensors1 - self)`` for each tensor, as PyTorch's {name} (the lerp op's rounding)."
    return fn


def _addc(op: str, inplace: bool):
    name = f"_foreach_{op}{'_' if inplace else ''}"

    def fn(self, tensor1, tensor2, value=1):
        tensors = _tensors(name, self)
        first = _tensors(name, tensor1, "tensor1", 2)
        second = _tensors(name, tensor2, "tensor2", 3)
        for other in (first, second):
            if len(other) != len(tensors):
                raise RuntimeError(
                    f"Tensor lists must have the same number of tensors, got {len(tensors)} and {len(other)}"
                )
        values = _scalars(name, len(tensors), value, "scalars")
        if inplace:
            for t, a, b, v in zip(tensors, first, second, values):
                getattr(t, op + "_")(a, b, value=v)
            return self
        return tuple(getattr(t, op)(a, b, value=v) for t, a, b, v in zip(tensors, first, second, values))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``x.{op}(t1, t2, value=v)`` for each tensor, as PyTorch's {name}."
    return fn


def _foreach_norm(self, ord=2, dtype=None):  # noqa: A002 - PyTorch's argument name
    """``[vkml.linalg.vector_norm(x, ord, dtype=dtype) for x in self]`` as a tuple, as PyTorch's _foreach_norm."""
    tensors = _tensors("_foreach_norm", self)
    return tuple(statistics.vector_norm(t, ord, dtype=dtype) for t in tensors)


def _foreach_max(self):
    """``[x.max() for x in self]`` as a tuple, as PyTorch's _foreach_max."""
    return tuple(t.max() for t in _tensors("_foreach_max", self))


def _foreach_zero_(self):
    """Every tensor of ``self`` filled with zeros; returns ``self``, as PyTorch's _foreach_zero_."""
    for t in _tensors("_foreach_zero_", self):
        t.zero_()
    return self


def _foreach_copy_(self, src, non_blocking=False):
    """``x.copy_(s)`` for each pair, as PyTorch's _foreach_copy_; returns ``self``."""
    tensors = _tensors("_foreach_copy_", self)
    sources = _tensors("_foreach_copy_", src, "src", 2)
    if len(sources) != len(tensors):
        raise RuntimeError(f"Tensor lists must have the same number of tensors, got {len(tensors)} and {len(sources)}")
    for t, s in zip(tensors, sources):
        t.copy_(s, non_blocking=non_blocking)
    return self


def _foreach_clone(self):
    """``[x.clone() for x in self]`` as a tuple."""
    return tuple(t.clone() for t in _tensors("_foreach_clone", self))


_DEFINED: dict[str, object] = {}
for _op in UNARY:
    for _inplace in (False, True):
        _f = _unary(_op, _inplace)
        _DEFINED[_f.__name__] = _f
for _op in BINARY:
    for _inplace in (False, True):
        _f = _binary(_op, _inplace)
        _DEFINED[_f.__name__] = _f
for _inplace in (False, True):
    for _f in (_lerp(_inplace), _addc("addcmul", _inplace), _addc("addcdiv", _inplace)):
        _DEFINED[_f.__name__] = _f
_DEFINED.update(
    _foreach_norm=_foreach_norm,
    _foreach_max=_foreach_max,
    _foreach_zero_=_foreach_zero_,
    _foreach_copy_=_foreach_copy_,
    _foreach_clone=_foreach_clone,
)
globals().update(_DEFINED)

EXPORTS = [Export(name, value=fn) for name, fn in _DEFINED.items()]
