"""PyTorch's text for a tensor: ``repr(t)``, ``str(t)`` and ``print(t)``, and ``vkml.set_printoptions``.

The rules are PyTorch's, so that a script's printed output reads the same under either library:

- one format for all elements of a floating tensor, chosen from its nonzero finite values: whole
  numbers print as ``1.``; scientific notation when max/min > 1000, max > 1e8 or min < 1e-4
  (``sci_mode`` forces either way); else ``precision`` digits after the point; every element
  padded to the widest;
- over ``threshold`` elements the tensor is summarized: ``edgeitems`` rows/elements at each end of
  every dimension and ``...`` between, the format chosen from the shown elements only;
- rows wrap at ``linewidth`` characters, nested dimensions indent under their bracket and are
  separated by ``dim - 1`` line breaks;
- suffixes: ``device='vulkan:0'`` off the default device, ``dtype=`` unless the dtype is the
  default float dtype, int64 or bool, ``size=`` for an empty tensor that is not 1-d,
  ``grad_fn=<...>`` or ``requires_grad=True``; a suffix that would pass ``linewidth`` starts a
  new line.

Values are formatted as Python floats (the exact double of each float16/bfloat16/float32 value),
as PyTorch formats ``tensor.tolist()``'s. Printing realizes the tensor and reads it back, as
``.numpy()`` does.

>>> import vkml
>>> vkml.tensor([1.0, 2.5, -3.0])
tensor([ 1.0000,  2.5000, -3.0000])
>>> vkml.arange(3, dtype=vkml.int32)
tensor([0, 1, 2], dtype=vkml.int32)
"""

from __future__ import annotations

import contextlib
import dataclasses
import math

import numpy as np

from ..ir import types as T
from . import defaults


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Set how tensors print, as ``torch.set_printoptions``.

    ``profile`` (``"default"``, ``"short"`` or ``"full"``) sets the four numbers first; the other
    arguments then override it. ``sci_mode`` is always set: ``None`` (the default) lets the values
    choose, as in PyTorch, so a call without it turns a forced mode off.

    >>> import vkml
    >>> vkml.set_printoptions(precision=2)
    >>> vkml.tensor([1.12345])
    tensor([1.12])
    >>> vkml.set_printoptions(threshold=5)
    >>> vkml.arange(10)
    tensor([0, 1, 2,  ..., 7, 8, 9])
    >>> vkml.set_printoptions(profile="default")
    >>> vkml.tensor([1.12345])
    tensor([1.1235])
    """
    if profile is not None:
        # PyTorch ignores a profile it does not know; vkml says so instead of doing nothing
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions(): profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        for key, value in _PROFILES[profile].items():
            setattr(PRINT_OPTS, key, value)
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options, as keyword arguments for ``set_printoptions``."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Print options for the length of a ``with`` block (``torch._tensor_str.printoptions``)."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


# ---------------------------------------------------------------------- the element format


class _Formatter:
    """One width and notation for every element shown, chosen from ``values`` (a flat numpy array)."""

    def __init__(self, values: np.ndarray, floating: bool):
        self.floating = floating
        self.int_mode, self.sci_mode, self.max_width = True, False, 1
        precision = PRINT_OPTS.precision
        if not floating:
            self.max_width = max([1, *(len(str(v)) for v in values.tolist())])
            return
        shown = values.astype(np.float64)
        finite = shown[np.isfinite(shown) & (shown != 0)]
        if finite.size == 0:
            return
        magnitude = np.abs(finite)
        low, high = magnitude.min(), magnitude.max()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if PRINT_OPTS.sci_mode is None:
            with np.errstate(over="ignore"):  # 1e308 / 1e-323 is inf: the ratio is past 1000 all the same
                self.sci_mode = bool(high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4)
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        numbers = finite.tolist()
        if self.sci_mode:
            widths = (len(f"{v:.{precision}e}") for v in numbers)
        elif self.int_mode:
            widths = (len(f"{v:.0f}") + 1 for v in numbers)  # the '.' that marks a float
        else:
            widths = (len(f"{v:.{precision}f}") for v in numbers)
        self.max_width = max(self.max_width, *widths)

    def format(self, value) -> str:
        if self.floating:
            if self.sci_mode:
                text = f"{value:{self.max_width}.{PRINT_OPTS.precision}e}"
            elif self.int_mode:
                text = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    text += "."
            else:
                text = f"{value:.{PRINT_OPTS.precision}f}"
        else:
            text = f"{value}"
        return (self.max_width - len(text)) * " " + text


def _summarized(a: np.ndarray) -> np.ndarray:
    """The elements a summarized print shows (the format is chosen from these alone)."""
    edge = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        # a[-0:] is the whole row: with edgeitems=0 PyTorch's format also sees every element
        return np.concatenate((a[:edge], a[-edge:])) if a.shape[0] > 2 * edge else a
    if not edge:
        return a[(slice(0, 0),) * a.ndim]
    rows = list(range(edge)) + list(range(a.shape[0] - edge, a.shape[0])) if a.shape[0] > 2 * edge else range(len(a))
    return np.stack([_summarized(a[i]) for i in rows])


def _vector(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / (fmt.max_width + 2)))
    edge = PRINT_OPTS.edgeitems
    if summarize and not edge:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * edge:
        data = [fmt.format(v) for v in a[:edge].tolist()] + [" ..."] + [fmt.format(v) for v in a[-edge:].tolist()]
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector(a, indent, summarize, fmt)
    edge = PRINT_OPTS.edgeitems
    if summarize and a.shape[0] > 2 * edge:
        head = [_nested(a[i], indent + 1, summarize, fmt) for i in range(edge)]
        tail = [_nested(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0] - edge, a.shape[0])]
        slices = [*head, "...", *tail]
    else:
        slices = [_nested(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _body(a: np.ndarray, floating: bool, indent: int) -> str:
    if a.size == 0:
        return "[]"
    summarize = a.size > PRINT_OPTS.threshold
    fmt = _Formatter((_summarized(a) if summarize else a).reshape(-1), floating)
    return _nested(a, indent, summarize, fmt)


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    parts = [text]
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


# ---------------------------------------------------------------------- the whole text


# vkml op names whose PyTorch backward node is named after another ATen op
_ATEN_NAMES = {
    "cast": "_to_copy",
    "reshape": "view",
    "matmul": "mm",
    "square": "pow",
    "gelu_tanh": "gelu",  # PyTorch's gelu takes approximate= as an argument
    "pad": "constant_pad_nd",
    "index_write": "index_put",  # a write at advanced indices (x[idx] = v); scatter, put, ... show their own
    "logsigmoid": "log_sigmoid",
}


def grad_fn_name(ctx) -> str:
    """PyTorch's spelling of a grad_fn's class for vkml's op name: ``mul`` -> ``MulBackward0``.

    vkml records one context per op it builds, named after the op; PyTorch names its backward node
    after the ATen op, which is the same name for the ops both libraries share (mul, add, sum, exp,
    relu, ...). A composite vkml builds from other ops shows its last op, unless it is marked with
    PyTorch's node (``mean`` shows ``MeanBackward0``: vkml/frontend/autograd.py, ``shown_as``). A
    ``vkml.autograd.Function``'s context is named ``<Class>Backward`` already, as PyTorch names it.
    """
    name = getattr(ctx, "name", ctx)  # a context, or its name
    shown = getattr(name, "shown", None)  # a composite's PyTorch node (vkml/frontend/autograd.py, ``shown_as``)
    if shown is not None:
        return shown
    name = str(name)
    if name.endswith("Backward"):
        return name
    # PyTorch's code generator title-cases each word of the ATen name: log1p -> Log1PBackward0
    return "".join(part.title() for part in _ATEN_NAMES.get(name, name).split("_")) + "Backward0"


def _default_device_name() -> str:
    # vkml.set_default_device, where the build has it, lives beside set_default_dtype
    getter = getattr(defaults, "get_default_device", None)
    device = getter() if getter is not None else None
    return "cpu" if device is None else str(device)


def tensor_repr(t) -> str:
    """``repr(t)`` as PyTorch writes it (module docstring)."""
    # a user's subclass prints its own name, as in PyTorch; vkml's own (Parameter, whose repr adds
    # its header, and the tensors autograd saves) print as tensors
    plain = type(t).__module__.split(".")[0] == "vkml"
    prefix = "tensor(" if plain else f"{type(t).__name__}("
    indent = len(prefix)
    suffixes = []
    device = str(t.device)
    if device != _default_device_name():
        suffixes.append(f"device='{device}'")
    dtype = t.dtype
    default_float = defaults.get_default_dtype()
    if t.device.kind == "meta":  # no values: PyTorch prints the shape in their place
        suffixes.append(f"size={tuple(t.shape)}")
        if dtype is not default_float:
            suffixes.append(f"dtype={dtype}")
        return _add_suffixes(prefix + "...", suffixes + _grad_suffixes(t), indent)
    values = t._host_values()
    floating = dtype.is_float
    if values.size == 0:
        if values.ndim != 1:
            suffixes.append(f"size={tuple(values.shape)}")
        if dtype is not default_float:
            suffixes.append(f"dtype={dtype}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(values.shape)}")
        if dtype not in (default_float, T.int64, T.bool_):
            suffixes.append(f"dtype={dtype}")
        body = _body(values, floating, indent)
    return _add_suffixes(prefix + body, suffixes + _grad_suffixes(t), indent)


def _grad_suffixes(t) -> list[str]:
    """``grad_fn=<...>`` or ``requires_grad=True``, as PyTorch ends a tensor's text."""
    ctx = t.grad_fn
    if ctx is not None:
        return [f"grad_fn=<{grad_fn_name(ctx)}>"]
    return ["requires_grad=True"] if t.requires_grad else []
