"""``out=``: PyTorch's keyword that writes a function's result into a given tensor
(``torch.add(x, y, out=result)``, ``torch.matmul(a, b, out=c)``, ``torch.max(x, 1, out=(v, i))``).

vkml's functions compute a new tensor; ``install`` wraps each public function that takes ``out=``
in PyTorch (``OUT_NAMES``) so that it then writes the result into ``out`` and returns ``out``,
with PyTorch's rules:

- under grad mode, an argument that requires grad (``out`` included) raises PyTorch's
  ``RuntimeError`` (``functions with out=... arguments don't support automatic differentiation``);
- the result converts to ``out``'s dtype where an in-place op's would (int to float, float32 to
  float64); float to int, or anything to bool, raises ``result type Float can't be cast to the
  desired output type Long``;
- ``isposinf``, ``isneginf`` and ``signbit`` take only a bool ``out``, ``float_power`` only a float64
  one, ``gather``, ``index_select``, ``take`` and the unary ops that keep their input's dtype (``neg``,
  ``abs``, ``floor``, ``clamp`` ...) only one of the result's dtype (PyTorch's
  RuntimeError, where the rule above would cast);
- an ``out`` of another shape is resized: silently when it has no elements, else with PyTorch's
  deprecation ``UserWarning``. vkml resizes a tensor that owns its storage; a view of another
  shape raises ``RuntimeError``;
- a function of several results takes a tuple of tensors and returns that tuple (the named tuple
  the function returns, where it returns one).

**Diverges** in one way: the wrapped function takes ``out=`` in each of its overloads, where
PyTorch refuses it for a few (``torch.sum(x, out=o)`` without ``dim`` is a ``TypeError`` there).
"""

from __future__ import annotations

import functools
import inspect
import warnings

from ..ir import types as T
from . import autograd, mutation, windows

# vkml.<name> functions whose PyTorch function documents ``out=`` (torch 2.x docstrings), and those
# it takes ``out=`` in its usual overload (sum and prod with a dim, softmax, the clamps, ...).
OUT_NAMES = frozenset(
    """
    abs acos acosh add addbmm addcdiv addcmul addmm addmv addr all amax amin aminmax any arange asin
    asinh atan atan2 atanh baddbmm bernoulli bitwise_and bitwise_left_shift bitwise_not bitwise_or
    bitwise_right_shift bitwise_xor bmm bucketize cat ceil chain_matmul cholesky cholesky_inverse
    cholesky_solve clamp clip column_stack concat concatenate copysign cos cosh cross cummax cummin
    cumprod cumsum deg2rad diag diff digamma div divide dot dstack empty eq erf erfc erfinv exp exp2
    expm1 eye fix float_power floor floor_divide fmax fmin fmod frac frexp full gather gcd ge geqrf ger
    greater greater_equal gt heaviside histc histogram hstack hypot i0 index_select inner inverse
    isneginf isposinf kron kthvalue lcm ldexp le lerp less less_equal lgamma linspace log log10 log1p
    log2 logaddexp logaddexp2 logcumsumexp logical_and logical_not logical_or logical_xor logit
    logspace logsumexp lt lu lu_solve lu_unpack masked_select matmul matrix_power max maximum mean
    median min minimum mm mode msort mul multinomial multiply mv nan_to_num nanmean nanmedian
    nanquantile narrow_copy ne neg negative nextafter nonzero norm normal not_equal ones ormqr outer
    polygamma pow qr quantile rad2deg rand randint randn randperm reciprocal remainder renorm round
    row_stack rsqrt searchsorted sgn sigmoid sign signbit sin sinc sinh sort sqrt square stack std
    std_mean sub subtract svd take_along_dim tan tanh topk triangular_solve tril triu trunc var
    var_mean vdot vstack where xlogy zeros
    sum prod softmax log_softmax clamp_min clamp_max threshold index_add scatter take tensordot
    hardshrink nansum
    alias_copy detach_copy diagonal_copy expand_copy narrow_copy permute_copy select_copy slice_copy
    split_copy split_with_sizes_copy squeeze_copy t_copy transpose_copy unbind_copy unfold_copy
    unsqueeze_copy view_copy view_as_real_copy view_as_complex_copy as_strided_copy range
    """.split()
)

_RESIZED = (
    "An output with one or more elements was resized since it had shape {old}, which does not match the "
    "required output shape {new}. This behavior is deprecated, and in a future PyTorch release outputs will "
    "not be resized unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, "
    "inplace, to zero elements with t.resize_(0)."
)


def _tensors(values):
    for v in values:
        if isinstance(v, list | tuple):
            yield from _tensors(v)
        elif hasattr(v, "requires_grad") and hasattr(v, "_node"):
            yield v


# Functions whose ``out`` must have the result's dtype exactly (PyTorch's checks and words), where the
# general rule would cast (a bool result into an int out, float64 into float32)
_EXACT_OUT_DTYPE = {
    "isposinf": "{name} does not support non-boolean outputs.",
    "isneginf": "{name} does not support non-boolean outputs.",
    "signbit": "{name} does not support non-boolean outputs.",
    "float_power": "the output given to {name} has dtype {out} but the operation's result requires dtype Double",
    "gather": "{name}(): Expected out tensor to have dtype {result}, but got {out} instead",  # C names
    "index_select": "{name}(): self and result must have the same scalar type ({result} and {out})",
    "take": "{name}(): self and out expected to have the same dtype, but got self.dtype = {result} and "
    "out.dtype = {out}",
    "nonzero": "{name}: Expected out tensor to have scalar type {result} but got scalar type {out}",
    "quantile": "{name}() out tensor must be same dtype as the input tensor",
    "nanquantile": "{name}() out tensor must be same dtype as the input tensor",
    "max": "Expected out tensor to have dtype {result}, but got {out} instead",
    "min": "Expected out tensor to have dtype {result}, but got {out} instead",
    "cummax": "expected scalar_type {result} but found {out}",
    "cummin": "expected scalar_type {result} but found {out}",
    "logcumsumexp": "expected scalar_type {result} but found {out}",
    "masked_select": "{name}(): self and result must have the same scalar type",
    "sort": "Expected out tensor to have dtype {result}, but got {out} instead",
    "topk": "Expected out tensor to have dtype {result}, but got {out} instead",
    "msort": "Expected out tensor to have dtype {result}, but got {out} instead",
    "mode": "expected scalar type '{result}' but got '{out}' for {which} output",
    "median": "expected scalar type '{result}' but got '{out}' for {which} output",
    "nanmedian": "expected scalar type '{result}' but got '{out}' for {which} output",
    # PyTorch's unary ops that keep their input's dtype take no out= of another dtype (not even a wider one)
    **{
        name: "Found dtype {out} but expected {result}"
        for name in "abs absolute neg negative ceil floor round trunc fix frac sign sgn bitwise_not clamp clip".split()
    },
    "kthvalue": "expected scalar type '{result}' but got '{out}' for {which} output",
}

# The functions whose dtype words are PyTorch's C type names ("long int", "float")
_C_NAMED = frozenset("max min sort topk msort gather".split())

# Functions PyTorch refuses an out= that shares elements with the input (kthvalue(a, k, out=(a, i)))
_NO_OVERLAP = frozenset(("kthvalue",))

# Elementwise functions: PyTorch refuses an out= that partly overlaps an input (exp(x[1:], out=x[:-1]), or
# x.t() as out of x) and takes one that is the input itself
_POINTWISE = frozenset(
    """
    abs acos acosh add addcdiv addcmul asin asinh atan atan2 atanh bitwise_and bitwise_left_shift bitwise_not
    bitwise_or bitwise_right_shift bitwise_xor ceil clamp clamp_max clamp_min clip copysign cos cosh deg2rad
    digamma div divide eq erf erfc erfinv exp exp2 expm1 fix float_power floor floor_divide fmax fmin fmod frac
    gcd ge greater greater_equal gt heaviside hypot i0 lcm ldexp le lerp less less_equal lgamma log log10 log1p
    log2 logaddexp logaddexp2 logical_and logical_not logical_or logical_xor logit lt maximum minimum mul
    multiply nan_to_num ne neg negative nextafter not_equal polygamma pow rad2deg reciprocal remainder round
    rsqrt sgn sigmoid sign signbit sin sinc sinh sqrt square sub subtract tan tanh trunc where xlogy
    """.split()
)

# Reductions whose out= must have the dtype= they are given (PyTorch's check, in C type names)
_DTYPE_MUST_MATCH_OUT = frozenset("sum prod nansum mean cumsum cumprod".split())
_C_NAMES = {
    "float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16", "int64": "long int",
    "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
}  # fmt: skip


# Scans whose out= dtype is the dtype they compute in, as a dtype= would be
_CAST_TO_OUT = frozenset(("cumsum", "cumprod"))

# Factories: with out=, the result takes out's dtype (PyTorch fills out; a dtype= that differs raises),
# and those whose length is a count (arange, linspace, ...) keep out's shape where the count matches
_FACTORIES = frozenset("arange range linspace logspace eye full zeros ones empty rand randn randint randperm".split())
_COUNTED = frozenset("arange range linspace logspace randperm".split())


def _factory_dtype(name: str, out, kwargs: dict) -> None:
    """PyTorch's factory out= rule: out's dtype is the result's; a different ``dtype=`` raises."""
    outs = out if isinstance(out, list | tuple) else (out,)
    if len(outs) != 1 or not hasattr(outs[0], "_node"):
        return
    given = kwargs.get("dtype")
    if given is None:
        kwargs["dtype"] = outs[0].dtype
    elif given is not outs[0].dtype and name in ("zeros", "ones", "empty", "full", "eye"):
        raise RuntimeError(
            f"dtype {mutation.torch_name(given)} does not match dtype of out parameter "
            f"({mutation.torch_name(outs[0].dtype)})"
        )


def _only_1d_empty(tensors) -> bool:
    return all(getattr(t, "shape", None) == (0,) for t in tensors)


def _refuse_overlap(out, inputs) -> None:
    """PyTorch's error where ``out`` shares elements with an input (cat([x, y], out=x)); ``out`` itself
    among the inputs raises even when empty."""
    if not hasattr(out, "_node"):
        return
    if any(t is out for t in inputs):
        raise RuntimeError(mutation.INPUT_OVERLAP)
    mutation.refuse_operand_overlap(out, inputs, same_ok=False)


def _write(name: str, out, result, which: str = "values") -> None:
    """``result`` into ``out`` by PyTorch's out= rules (above)."""
    if not hasattr(out, "_node"):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out.device != result.device:
        raise RuntimeError(
            f"{name}(): expected the out tensor on device {result.device}, but it is on device {out.device}"
        )
    if name in _EXACT_OUT_DTYPE and out.dtype is not result.dtype:
        message = _EXACT_OUT_DTYPE[name]
        names = _C_NAMES if name in _C_NAMED else {}
        raise RuntimeError(
            message.format(
                name=name,
                which=which,
                out=names.get(out.dtype.name, mutation.torch_name(out.dtype)),
                result=names.get(result.dtype.name, mutation.torch_name(result.dtype)),
            )
        )
    if name in ("all", "any") and out.dtype is not T.bool_ and not (out.dtype is T.uint8 and result.dtype is T.uint8):
        raise RuntimeError(f"{name} only supports bool tensor for result, got: {mutation.torch_name(out.dtype)}")
    if name in ("cat", "concat", "concatenate") and not mutation.can_cast(result.dtype, out.dtype):
        raise TypeError(  # PyTorch's class and words for cat
            f"torch.cat(): input types can't be cast to the desired output type {mutation.torch_name(out.dtype)}"
        )
    if not mutation.can_cast(result.dtype, out.dtype):
        raise RuntimeError(
            f"result type {mutation.torch_name(result.dtype)} can't be cast to the desired output type "
            f"{mutation.torch_name(out.dtype)}"
        )
    with autograd.no_grad():
        value = result.to(out.dtype)
        if tuple(out.shape) == tuple(result.shape):
            mutation.copy_(out, value)
            return
        if out.numel() != 0:
            warnings.warn(_RESIZED.format(old=list(out.shape), new=list(result.shape)), UserWarning, stacklevel=4)
        if out._base is not None:  # PyTorch's resize_: the row-major view of its storage from its offset
            try:
                windows.resize_(out, tuple(result.shape))
            except NotImplementedError:
                raise RuntimeError(
                    f"{name}(): out is a view of shape {list(out.shape)}, the result has shape "
                    f"{list(result.shape)}: vkml does not grow a view's storage"
                ) from None
            mutation.copy_(out, value)
            return
        out._node = value.node
        out._vcount += 1


def _frexp_out_dtypes(input_dtype, mantissa, exponent) -> None:
    """PyTorch's frexp checks its outputs before computing: the mantissa in the input's dtype, an int32 exponent."""
    for what, o, want in (("mantissa", mantissa, input_dtype), ("exponent", exponent, T.int32)):
        if hasattr(o, "_node") and o.dtype is not want:
            expected = "int dtype" if what == "exponent" else f"dtype {_C_NAMES.get(want.name, want.name)}"
            raise RuntimeError(
                f"torch.frexp() expects {what} to have {expected} but got {_C_NAMES.get(o.dtype.name, o.dtype.name)}"
            )


def with_out(fn, name: str):
    """``fn`` taking PyTorch's ``out=`` keyword (the module docstring's rules)."""

    @functools.wraps(fn)
    def function(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if name == "nonzero" and kwargs.get("as_tuple"):
            raise RuntimeError("nonzero does not support the out kwarg when as_tuple is True")
        outs = tuple(out) if isinstance(out, list | tuple) else (out,)
        if name == "frexp" and len(outs) == 2 and args and hasattr(args[0], "dtype"):
            _frexp_out_dtypes(args[0].dtype, *outs)
        if autograd.is_grad_enabled() and any(
            t.requires_grad for t in (*_tensors(args), *_tensors(kwargs.values()), *_tensors(outs))
        ):
            raise RuntimeError(
                f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                "but one of the arguments requires grad."
            )
        if name in _FACTORIES:
            _factory_dtype(name, out, kwargs)
        # PyTorch's cat skips 1-d empty inputs (a legacy rule) and returns before its overlap check when
        # every input is one: cat([x], out=x) passes for an x of shape (0,)
        if name in ("cat", "concat", "concatenate") and args and not _only_1d_empty(args[0]):
            _refuse_overlap(out, args[0])
        if name in _NO_OVERLAP and args:
            for o in outs:
                _refuse_overlap(o, args[:1])
        if name in _POINTWISE:
            for o in outs:
                if hasattr(o, "_node"):
                    mutation.refuse_operand_overlap(o, (*args, *kwargs.values()), same_ok=True)
        if name in ("searchsorted", "bucketize") and hasattr(out, "_node"):
            flag = bool(kwargs.get("out_int32", False))
            if out.dtype is not (T.int32 if flag else T.int64):
                raise RuntimeError(
                    f"torch.{name}(): output tensor's dtype is wrong, it can only be Int(int32) or Long(int64) "
                    f"depending on whether out_int32 flag is True, but we got output tensor's dtype "
                    f"{mutation.torch_name(out.dtype)} and out_int32 flag is {flag}"
                )
        given = kwargs.get("dtype")
        if name in _DTYPE_MUST_MATCH_OUT and given is not None and hasattr(out, "_node") and out.dtype is not given:
            raise RuntimeError(
                f"Expected out tensor to have dtype {_C_NAMES.get(given.name, given.name)}, but got "
                f"{_C_NAMES.get(out.dtype.name, out.dtype.name)} instead"
            )
        if name in _CAST_TO_OUT and given is None and hasattr(out, "_node") and out.dtype is not T.bool_:
            kwargs["dtype"] = out.dtype  # PyTorch converts the input to out's dtype first
        result = fn(*args, **kwargs)
        if name in _COUNTED and hasattr(out, "_node") and out.numel() == result.numel():
            result = result.reshape(tuple(out.shape))  # PyTorch writes the values in out's order, no resize
        results = tuple(result) if isinstance(result, tuple) else (result,)
        if isinstance(out, list | tuple) != isinstance(result, tuple) or len(outs) != len(results):
            raise TypeError(f"{name}(): out must be {len(results)} tensor(s), got {out!r}")
        for k, (o, r) in enumerate(zip(outs, results, strict=True)):
            _write(name, o, r, "values" if k == 0 else "indices")
        if not isinstance(result, tuple):
            return out
        return type(result)(*outs) if hasattr(result, "_fields") else tuple(outs)

    function.__signature__ = _signature_with_out(fn)
    function.__wrapped_by_out__ = True
    return function


def _signature_with_out(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    extra = [p for p in sig.parameters.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
    out = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)
    try:
        return sig.replace(parameters=[*params, out, *extra])
    except ValueError:
        return None


def install(namespace: dict) -> None:
    """Wrap ``namespace``'s (vkml's globals) functions of ``OUT_NAMES`` that do not take ``out`` themselves.

    A function bound under several names (``abs`` and ``absolute``) gets one wrapper for all of
    them, so aliases stay one object (docs/ops lists them by that).
    """
    wrappers = {}
    for name in sorted(OUT_NAMES):
        fn = namespace.get(name)
        if fn is None or not callable(fn) or id(fn) in wrappers:
            continue
        try:
            if "out" in inspect.signature(fn).parameters:
                continue
        except (TypeError, ValueError):
            pass
        wrappers[id(fn)] = with_out(fn, name)
    for name, value in list(namespace.items()):
        if not name.startswith("_") and id(value) in wrappers:
            namespace[name] = wrappers[id(value)]
