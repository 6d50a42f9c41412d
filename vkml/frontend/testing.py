"""``vkml.testing.assert_close``: ``torch.testing.assert_close`` for vkml tensors, with its defaults,
checks and messages, and the first mismatched elements listed after PyTorch's summary.

    >>> import vkml
    >>> vkml.testing.assert_close(vkml.tensor([1.0, 2.0]), vkml.tensor([1.0, 2.0 + 1e-7]))
    >>> vkml.testing.assert_close(vkml.tensor([1.0, 2.0]), vkml.tensor([1.0, 2.5]))  # doctest: +SKIP
    AssertionError: Tensor-likes are not close!
    <BLANKLINE>
    Mismatched elements: 1 / 2 (50.0%)
    Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)
    Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)
    <BLANKLINE>
    Mismatches (index: actual, expected): (1,): 2.0, 2.5
"""

from __future__ import annotations

import collections.abc
import math
import warnings

import numpy as np

from ..tensor import Tensor
from . import construction
from . import random as _random

# PyTorch's default (rtol, atol) per dtype name; integers and bool compare exactly.
DEFAULT_TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
}
LISTED_MISMATCHES = 10  # how many mismatched elements the message names


class _Mismatch(AssertionError):
    """A failed comparison, with where in nested inputs it happened."""

    def __init__(self, message: str, path: tuple = ()):
        super().__init__(message)
        self.message, self.path = message, path


def assert_close(
    actual,
    expected,
    *,
    allow_subclasses: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    msg=None,
) -> None:
    """Raise AssertionError unless ``actual`` and ``expected`` are close: ``|actual - expected| <= atol +
    rtol * |expected|`` elementwise, with the same shape, device and dtype (unless told not to check).

    Inputs are vkml tensors, numpy arrays, Python numbers, or sequences and mappings of them,
    paired by type as PyTorch pairs them. ``rtol`` and ``atol`` go together; unset, they are
    PyTorch's defaults for the dtype (float32: 1.3e-6 and 1e-5; float16: 1e-3 and 1e-5; integers
    and bool: exact). ``equal_nan`` makes NaN equal to NaN; infinities must be equal.
    ``msg`` (a string, or a callable given the generated message) replaces the message.
    """
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}.")
    options = {"rtol": rtol, "atol": atol, "equal_nan": equal_nan, "check_device": check_device}
    options["check_dtype"] = check_dtype
    try:
        _compare(actual, expected, options, ())
    except _Mismatch as failure:
        text = failure.message
        if failure.path:
            text += "\n\nThe failure occurred for item " + "".join(f"[{key!r}]" for key in failure.path)
        if msg is not None:
            text = msg(text) if callable(msg) else msg
        raise AssertionError(text) from None


def _is_tensor(value) -> bool:
    return isinstance(value, Tensor)


def _is_number(value) -> bool:
    return isinstance(value, (bool, int, float, complex)) or isinstance(value, np.generic)


def _compare(actual, expected, options: dict, path: tuple) -> None:
    if _is_tensor(actual) and _is_tensor(expected):
        return _compare_tensors(actual, expected, options, path)
    if isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray):
        return _compare_arrays(actual, expected, options, path, "numpy")
    if _is_number(actual) and _is_number(expected):
        return _compare_scalars(actual, expected, options, path)
    sequence = collections.abc.Sequence
    if isinstance(actual, sequence) and isinstance(expected, sequence) and not isinstance(actual, (str, bytes)):
        if len(actual) != len(expected):
            raise _Mismatch(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", path)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, options, path + (i,))
        return None
    mapping = collections.abc.Mapping
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        if set(actual) != set(expected):
            raise _Mismatch(
                f"The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {sorted(set(expected) - set(actual), key=repr)}\n"
                f"Additional keys in the actual mapping: {sorted(set(actual) - set(expected), key=repr)}",
                path,
            )
        for key in actual:
            _compare(actual[key], expected[key], options, path + (key,))
        return None
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")


def _attribute(name: str, a, e, path: tuple) -> None:
    if a != e:
        raise _Mismatch(f"The values for attribute '{name}' do not match: {a} != {e}.", path)


def _compare_tensors(actual, expected, options: dict, path: tuple) -> None:
    _attribute("shape", tuple(actual.shape), tuple(expected.shape), path)
    if options["check_device"]:
        _attribute("device", actual.device.name, expected.device.name, path)
    if options["check_dtype"]:
        _attribute("dtype", actual.dtype, expected.dtype, path)
    _compare_arrays(actual.detach().numpy(), expected.detach().numpy(), options, path, "vkml")


def _tolerances(a: np.ndarray, e: np.ndarray, options: dict) -> tuple[float, float]:
    if options["rtol"] is not None:
        return float(options["rtol"]), float(options["atol"])
    found = [DEFAULT_TOLERANCES.get(x.dtype.name, (0.0, 0.0)) for x in (a, e)]
    return max(r for r, _ in found), max(t for _, t in found)


def _compare_arrays(a: np.ndarray, e: np.ndarray, options: dict, path: tuple, kind: str) -> None:
    if kind == "numpy":
        _attribute("shape", a.shape, e.shape, path)
        if options["check_dtype"]:
            _attribute("dtype", a.dtype, e.dtype, path)
    rtol, atol = _tolerances(a, e, options)
    common = np.result_type(a.dtype, e.dtype)
    if common == np.bool_:
        common = np.dtype(np.int64)  # bools compare as 0 and 1, as PyTorch does
    a, e = a.astype(common), e.astype(common)
    if a.ndim == 0:
        return _compare_scalars(a.item(), e.item(), {**options, "rtol": rtol, "atol": atol}, path)
    with np.errstate(all="ignore"):
        matches = _close(a, e, rtol, atol, options["equal_nan"])
    if matches.all():
        return None
    with np.errstate(all="ignore"):
        abs_diff = np.abs(a - e) if common.kind == "f" else np.abs(a.astype(np.int64) - e.astype(np.int64))
        rel_dtype = common if common.kind == "f" else np.float32
        rel_diff = abs_diff.astype(rel_dtype) / np.abs(e).astype(rel_dtype)
    exact = rtol == 0 and atol == 0
    total, bad = matches.size, int(matches.size - matches.sum())
    lines = [
        f"Tensor-likes are not {'equal' if exact else 'close'}!",
        "",
        f"Mismatched elements: {bad} / {total} ({bad / total:.1%})",
    ]
    for label, diff, allowed in (("absolute", abs_diff, atol), ("relative", rel_diff, rtol)):
        where = int(np.argmax(diff.reshape(-1)))  # the first NaN if there is one, as torch.max
        index = tuple(int(i) for i in np.unravel_index(where, diff.shape))
        limit = "" if exact else f" (up to {allowed} allowed)"
        lines.append(f"Greatest {label} difference: {diff.reshape(-1)[where].item()} at index {index}{limit}")
    positions = np.argwhere(~matches)[:LISTED_MISMATCHES]
    listed = [f"{tuple(int(i) for i in p)}: {a[tuple(p)].item()}, {e[tuple(p)].item()}" for p in positions]
    more = f" (the first {len(listed)} of {bad})" if bad > len(listed) else ""
    lines += ["", f"Mismatches{more} (index: actual, expected): " + "; ".join(listed)]
    raise _Mismatch("\n".join(lines), path)


def _close(a: np.ndarray, e: np.ndarray, rtol: float, atol: float, equal_nan: bool) -> np.ndarray:
    """PyTorch's isclose: equal values (infinities included) or within the tolerance; NaN by ``equal_nan``."""
    if a.dtype.kind != "f":
        if rtol == 0 and atol == 0:
            return a == e
        diff = np.abs(a.astype(np.int64) - e.astype(np.int64)).astype(np.float64)
        return diff <= atol + rtol * np.abs(e.astype(np.float64))
    close = a == e
    finite = np.isfinite(a) & np.isfinite(e)
    close |= finite & (np.abs(a - e) <= atol + rtol * np.abs(e))
    if equal_nan:
        close |= np.isnan(a) & np.isnan(e)
    return close


def _compare_scalars(actual, expected, options: dict, path: tuple) -> None:
    if isinstance(actual, np.generic):
        actual = actual.item()
    if isinstance(expected, np.generic):
        expected = expected.item()
    rtol, atol = options["rtol"], options["atol"]
    if rtol is None:
        is_float = isinstance(actual, float) or isinstance(expected, float)
        rtol, atol = DEFAULT_TOLERANCES["float64"] if is_float else (0.0, 0.0)
    a, e = (int(x) if isinstance(x, bool) else x for x in (actual, expected))
    if a == e or (options["equal_nan"] and _isnan(a) and _isnan(e)):
        return None
    finite = all(math.isfinite(abs(x)) for x in (a, e))
    if finite and abs(a - e) <= atol + rtol * abs(e):
        return None
    exact = rtol == 0 and atol == 0
    abs_diff = abs(a - e) if finite or (_isnan(a) or _isnan(e)) else math.inf
    rel_diff = abs_diff / abs(e) if e != 0 else math.inf
    up_abs = "" if exact else f" (up to {atol} allowed)"
    up_rel = "" if exact else f" (up to {rtol} allowed)"
    raise _Mismatch(
        f"Scalars are not {'equal' if exact else 'close'}!\n\nExpected {expected} but got {actual}.\n"
        f"Absolute difference: {abs_diff}{up_abs}\nRelative difference: {rel_diff}{up_rel}",
        path,
    )


def _isnan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


# ---------------------------------------------------------------------- make_tensor, assert_allclose


def make_tensor(
    *shape,
    dtype,
    device,
    low=None,
    high=None,
    requires_grad: bool = False,
    noncontiguous: bool = False,
    exclude_zero: bool = False,
    memory_format=None,
):
    """``torch.testing.make_tensor``: a tensor of random values in [low, high) (floats: [-9, 9] by default,
    integers [-9, 10), uint8 [0, 10), bool either), PyTorch's draws (``uniform_``, ``randint``) from vkml's generator.

    ``noncontiguous`` gives a strided view (every other element of a tensor twice as long in its last
    dim); ``exclude_zero`` replaces zeros with 1 (integers) or the dtype's eps (floats), as PyTorch's.
    """
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    for bound in (low, high):
        if bound is not None and isinstance(bound, float) and math.isnan(bound):
            raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if dtype.is_float:
        lo = -9.0 if low is None else float(low)
        hi = 9.0 if high is None else float(high)
    elif dtype.name == "bool":
        lo, hi = 0, 2
    else:
        lo = (0 if dtype.name.startswith("uint") else -9) if low is None else math.ceil(low)
        hi = 10 if high is None else math.ceil(high)
    if lo > hi or (not dtype.is_float and lo >= hi):
        raise ValueError(f"`low` must be less than `high`, but got {lo} >= {hi}")
    if dtype.is_float:
        if hi - lo >= float(np.finfo(np.dtype(dtype.value_np)).max):  # PyTorch's: half the span, doubled
            t = _random.uniform_values("make_tensor", shape, lo / 2, hi / 2, dtype, device) * 2
        else:
            t = _random.uniform_values("make_tensor", shape, lo, hi, dtype, device)
    else:
        t = construction.randint(lo, hi, shape, device=device, dtype=dtype)
    if exclude_zero:
        one = 1 if not dtype.is_float else float(np.finfo(np.dtype(dtype.name)).eps)
        t = t.masked_fill(t == 0, one)
    if noncontiguous and t.numel() > 1:
        t = t.repeat_interleave(2, dim=-1)[..., ::2]
    elif memory_format is not None:
        t = t.contiguous(memory_format=memory_format)
    if requires_grad:
        t = t.detach().requires_grad_(True)  # a leaf, as PyTorch's
    return t


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan: bool = True, msg: str = ""):
    """``torch.testing.assert_allclose`` (deprecated in PyTorch, with its FutureWarning): ``assert_close``
    with NaN equal to NaN by default and without the dtype check."""
    warnings.warn(
        "`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future release. "
        "Please use `torch.testing.assert_close()` instead.",
        FutureWarning,
        stacklevel=2,
    )
    if (rtol is None) != (atol is None):
        raise ValueError("rtol and atol must both be specified or both be unspecified")
    kwargs = {} if rtol is None else {"rtol": rtol, "atol": atol}
    assert_close(actual, expected, equal_nan=equal_nan, check_dtype=False, msg=msg or None, **kwargs)
