"""vkml: lazy tensors for Python on any Vulkan GPU, with operators written once in a small kernel IR.

>>> import vkml
>>> x = vkml.tensor([1.0, 2.0, 3.0], device=vkml.best_device())
>>> (x * x).sum().item()
14.0
"""

# The operators before vkml.dsl's modules: dsl.elementwise imports them back.
from .frontend import operators as _operators  # noqa: F401

# isort: split
from . import dsl  # noqa: F401  (vkml.dsl: the functions custom operators are written with)
from . import ops as _ops  # noqa: F401  (registers every operator)
from .config import VERSION as __version__  # noqa: F401  (torch.__version__ has it)
from .dsl.elementwise import elementwise
from .dsl.kernel import kernel
from .errors import CompileError, DeviceError, DTypeError, OutOfMemoryError, ShapeError
from .frontend import creation as _creation
from .frontend.autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .frontend.creation import arange, full, full_like, ones, ones_like, zeros, zeros_like
from .frontend.devices import best_device, device, vulkan_device_reports
from .frontend.indexing import gather, index_select, nonzero, scatter, scatter_add, take_along_dim
from .frontend.operators import (
    abs,
    add,
    amax,
    amin,
    argmax,
    argmin,
    cat,
    clamp,
    clip,
    clone,
    constant_pad_nd,
    div,
    eq,
    exp,
    expand,
    flip,
    ge,
    gt,
    le,
    log,
    log_softmax,
    logical_and,
    logical_not,
    logical_or,
    logsumexp,
    lt,
    masked_fill,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    mul,
    ne,
    neg,
    permute,
    pow,
    prod,
    relu,
    reshape,
    rsqrt,
    sigmoid,
    sign,
    softmax,
    sqrt,
    squeeze,
    sub,
    sum,
    tanh,
    transpose,
    unsqueeze,
    where,
)
from .frontend.random import Generator, manual_seed, rand, rand_like, randn, randn_like
from .frontend.realize import realize, set_eager
from .frontend.serialization import load, save
from .ir.types import bool_ as bool  # noqa: A001
from .ir.types import float16, float32, int32, int64
from .tensor import Tensor

# The submodule vkml.tensor shadowed the creation function of the same name: bind it again.
tensor = _creation.tensor
half = float16
float = float32  # noqa: A001
long = int64
int = int32  # noqa: A001

__all__ = [
    "Tensor",
    "elementwise",
    "kernel",
    "tensor",
    "zeros",
    "ones",
    "full",
    "arange",
    "full_like",
    "zeros_like",
    "ones_like",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "constant_pad_nd",
    "manual_seed",
    "rand",
    "randn",
    "rand_like",
    "randn_like",
    "Generator",
    "device",
    "best_device",
    "vulkan_device_reports",
    "realize",
    "set_eager",
    "save",
    "load",
    "CompileError",
    "DeviceError",
    "DTypeError",
    "OutOfMemoryError",
    "ShapeError",
    "float32",
    "float16",
    "int32",
    "int64",
    "bool",
    "half",
    "float",
    "long",
    "int",
    "abs",
    "add",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "cat",
    "clamp",
    "clip",
    "div",
    "eq",
    "exp",
    "expand",
    "flip",
    "ge",
    "gt",
    "le",
    "log",
    "log_softmax",
    "logical_and",
    "logical_not",
    "logical_or",
    "logsumexp",
    "lt",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mul",
    "ne",
    "neg",
    "permute",
    "pow",
    "prod",
    "relu",
    "reshape",
    "rsqrt",
    "sigmoid",
    "sign",
    "softmax",
    "sqrt",
    "squeeze",
    "sub",
    "sum",
    "tanh",
    "transpose",
    "unsqueeze",
    "where",
    "clone",
    "masked_fill",
    "gather",
    "index_select",
    "nonzero",
    "scatter",
    "scatter_add",
    "take_along_dim",
]

# Shape and construction ops (vkml/frontend/shape.py)
from .frontend.shape import (  # noqa: E402
    addmm,
    addmv,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    baddbmm,
    bmm,
    cartesian_prod,
    chunk,
    column_stack,
    diag,
    diag_embed,
    diagonal,
    dot,
    dstack,
    einsum,
    flatten,
    fliplr,
    flipud,
    ger,
    hsplit,
    hstack,
    meshgrid,
    mm,
    moveaxis,
    movedim,
    mv,
    narrow,
    outer,
    repeat_interleave,
    roll,
    rot90,
    row_stack,
    split,
    stack,
    swapaxes,
    swapdims,
    t,
    tensor_split,
    tensordot,
    tile,
    trace,
    tril,
    tril_indices,
    triu,
    triu_indices,
    unbind,
    unflatten,
    vsplit,
    vstack,
)

__all__ += [  # noqa: PLE0605
    "addmm",
    "addmv",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "baddbmm",
    "bmm",
    "cartesian_prod",
    "chunk",
    "column_stack",
    "diag",
    "diag_embed",
    "diagonal",
    "dot",
    "dstack",
    "einsum",
    "flatten",
    "fliplr",
    "flipud",
    "ger",
    "hsplit",
    "hstack",
    "meshgrid",
    "mm",
    "moveaxis",
    "movedim",
    "mv",
    "narrow",
    "outer",
    "repeat_interleave",
    "roll",
    "rot90",
    "row_stack",
    "split",
    "stack",
    "swapaxes",
    "swapdims",
    "t",
    "tensor_split",
    "tensordot",
    "tile",
    "trace",
    "tril",
    "tril_indices",
    "triu",
    "triu_indices",
    "unbind",
    "unflatten",
    "vsplit",
    "vstack",
]

# More creation ops (vkml/frontend/construction.py)
from .frontend.construction import (  # noqa: E402
    bernoulli,
    empty,
    empty_like,
    eye,
    linspace,
    logspace,
    multinomial,
    normal,
    randint,
    randint_like,
    randperm,
)

__all__ += [
    "bernoulli",
    "empty",
    "empty_like",
    "eye",
    "linspace",
    "logspace",
    "multinomial",
    "normal",
    "randint",
    "randint_like",
    "randperm",
]
# Pointwise operators of issue 17 (vkml/frontend/pointwise.py): every name it exports, as vkml.<name>.
from .frontend import pointwise as _pointwise  # noqa: E402

for _name in _pointwise.TENSOR_METHODS:
    globals()[_name] = getattr(_pointwise, _name)
__all__ += _pointwise.TENSOR_METHODS
del _name
# ---------------------------------------------------------------------- statistics, norms and scans
# (vkml/frontend/statistics.py, scans.py; vkml.linalg and vkml.return_types as PyTorch's namespaces)
import sys as _sys  # noqa: E402

from .frontend import linalg, return_types  # noqa: E402
from .frontend.scans import cummax, cummin, cumprod, cumsum, logcumsumexp  # noqa: E402
from .frontend.selection import kthvalue, median, mode, nanmedian, nanquantile, quantile  # noqa: E402
from .frontend.statistics import (  # noqa: E402
    all,  # noqa: A004
    aminmax,
    any,  # noqa: A004
    count_nonzero,
    nanmean,
    nansum,
    norm,
    std,
    std_mean,
    var,
    var_mean,
)

_sys.modules[__name__ + ".linalg"] = linalg  # `import vkml.linalg` finds the namespace
_sys.modules[__name__ + ".return_types"] = return_types
__all__ += [
    "linalg",
    "return_types",
    "var",
    "std",
    "var_mean",
    "std_mean",
    "all",
    "any",
    "count_nonzero",
    "nansum",
    "nanmean",
    "aminmax",
    "norm",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "logcumsumexp",
    "kthvalue",
    "median",
    "nanmedian",
    "mode",
    "quantile",
    "nanquantile",
]
# ---------------------------------------------------------------------- device memory (vkml/frontend/memory.py)
from .frontend.memory import (  # noqa: E402
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_stats,
    reset_peak_memory_stats,
)

__all__ += [
    "empty_cache",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "reset_peak_memory_stats",
]
# ---------------------------------------------------------------------- small composites (vkml/frontend/tensor_api.py)
from .frontend.tensor_api import (  # noqa: E402
    Size,
    addcdiv,
    addcmul,
    broadcast_to,
    clamp_max,
    clamp_min,
    numel,
    positive,
    rsub,
    select,
)
from .ir.types import DType as dtype  # noqa: E402  (isinstance(x.dtype, vkml.dtype), as torch.dtype)

__all__ += ["Size", "dtype", "numel", "addcdiv", "addcmul", "broadcast_to", "clamp_max", "clamp_min", "positive"]
__all__ += ["rsub", "select"]
# Scatter reductions, index_*, masked_select/masked_scatter, take/put (vkml/frontend/index_ops.py)
from .frontend import index_ops as _index_ops  # noqa: E402

for _name in _index_ops.FUNCTIONS:
    globals()[_name] = getattr(_index_ops, _name)
__all__ += _index_ops.FUNCTIONS
del _name
# Sorting, searching and counting of issue 17 (vkml/frontend/sorting.py, searching.py, counting.py,
# combining.py).
from .frontend import combining as _combining  # noqa: E402
from .frontend import counting as _counting  # noqa: E402
from .frontend import searching as _searching  # noqa: E402
from .frontend import sorting as _sorting  # noqa: E402

for _module in (_sorting, _searching, _counting, _combining):
    for _name in _module.PUBLIC:
        globals()[_name] = getattr(_module, _name)
    __all__ += _module.PUBLIC
del _module, _name
# ---------------------------------------------------------------------- PyTorch programs' surroundings
# (issue 19): numpy/DLPack interop, "cuda" device names and torch.cuda's functions, torch.backends'
# switches, matmul precision, determinism, compile, testing (docs/interop.md, docs/devices.md).
from .frontend import compat as _compat  # noqa: E402
from .frontend import cuda, profiler, testing  # noqa: E402
from .frontend.compat import (  # noqa: E402
    are_deterministic_algorithms_enabled,
    compile,  # noqa: A004
    get_float32_matmul_precision,
    is_deterministic_algorithms_warn_only_enabled,
    set_float32_matmul_precision,
    use_deterministic_algorithms,
)
from .frontend.interop import as_tensor, from_dlpack, from_numpy  # noqa: E402

backends = _compat.backends
for _module_name, _module in (("cuda", cuda), ("testing", testing), ("backends", backends), ("profiler", profiler)):
    _sys.modules[f"{__name__}.{_module_name}"] = _module  # `import vkml.cuda` finds the namespace
for _module_name in ("cudnn", "cuda", "mps"):
    _sys.modules[f"{__name__}.backends.{_module_name}"] = getattr(backends, _module_name)
del _module_name, _module
__all__ += [
    "cuda",
    "testing",
    "profiler",
    "backends",
    "compile",
    "set_float32_matmul_precision",
    "get_float32_matmul_precision",
    "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled",
    "from_numpy",
    "as_tensor",
    "from_dlpack",
]

# ---------------------------------------------------------------- the dtypes of issue 17 (docs/dtypes.md)
from .frontend.dtypes import promote_types, result_type  # noqa: E402
from .ir.types import bfloat16, float64, int8, int16, uint8  # noqa: E402

double = float64
short = int16
__all__ += ["float64", "double", "uint8", "int8", "int16", "short", "bfloat16", "promote_types", "result_type"]
# ---------------------------------------------------------------------- autograd namespace and grad modes
# (vkml/frontend/autograd_api.py: vkml.autograd.grad / backward / Function, as torch.autograd)
from .frontend import autograd_api as autograd  # noqa: E402
from .frontend.autograd import inference_mode, is_inference_mode_enabled  # noqa: E402

_sys.modules[__name__ + ".autograd"] = autograd  # `import vkml.autograd` finds the namespace
__all__ += ["autograd", "inference_mode", "is_inference_mode_enabled"]
# ---------------------------------------------------------------------- default dtype and type predicates
# (vkml/frontend/defaults.py)
from .frontend.defaults import get_default_dtype, is_floating_point, is_tensor, set_default_dtype  # noqa: E402

__all__ += ["get_default_dtype", "set_default_dtype", "is_tensor", "is_floating_point"]

# ---------------------------------------------------------------------- transcendental functions
# (vkml/frontend/transcendental.py): sin ... erfinv, their arc* aliases, and vkml.special.
from .frontend import transcendental as _transcendental  # noqa: E402

for _name in _transcendental.TENSOR_METHODS:
    globals()[_name] = getattr(_transcendental, _name)
__all__ += _transcendental.TENSOR_METHODS
del _name
special = _transcendental.special
_sys.modules[__name__ + ".special"] = special  # `import vkml.special` finds the namespace
__all__ += ["special"]

# ---------------------------------------------------------------------- lazy submodules
# vkml.nn (layers, losses, functional), vkml.optim (SGD, Adam, AdamW) and vkml.utils (utils.data:
# datasets, samplers, DataLoader) load on first use: `vkml.nn.Linear`, `import vkml.nn` and
# `from vkml import nn` all work after `import vkml`. A first tensor op needs none of them, and
# they (with multiprocessing, which the DataLoader imports) were a third of `import vkml`
# (bench/bench_cold_start.py measures it).
import importlib as _importlib  # noqa: E402

_LAZY_SUBMODULES = ("nn", "optim", "utils")


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")  # binds vkml.<name>: asked once
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_SUBMODULES))


# ---------------------------------------------------------------- dtype limits (vkml/frontend/dtype_info.py)
from .frontend.dtype_info import can_cast, finfo, iinfo  # noqa: E402

# uint16: movement, conversion, creation and PyTorch's few ops; uint32, uint64: dtype objects without
# tensors (docs/dtypes.md)
from .ir.types import uint16, uint32, uint64  # noqa: E402

__all__ += ["can_cast", "finfo", "iinfo", "uint16", "uint32", "uint64"]
# PyTorch's NumPy-style aliases of the arithmetic and comparison ops (the same functions).
absolute, negative, multiply, subtract, divide = abs, neg, mul, sub, div  # noqa: E402
greater, less, greater_equal, less_equal, not_equal = gt, lt, ge, le, ne  # noqa: E402
__all__ += ["absolute", "negative", "multiply", "subtract", "divide"]
__all__ += ["greater", "less", "greater_equal", "less_equal", "not_equal"]
# ---------------------------------------------------------------------- mixed precision (vkml/frontend/amp.py)
# KEEP THIS BLOCK LAST (merges append above it): autocast wraps the public functions bound
# above, the Tensor methods and nn.functional's.
from . import nn as _nn  # noqa: E402
from .frontend import amp  # noqa: E402
from .frontend.amp import autocast, get_autocast_dtype, is_autocast_enabled  # noqa: E402
from .nn import functional_layers as _functional_layers  # noqa: E402

_sys.modules[__name__ + ".amp"] = amp  # `import vkml.amp` finds the namespace
amp.install([_sys.modules[__name__], _nn.functional, autograd], Tensor, [(_functional_layers, "_conv")])
__all__ += ["amp", "autocast", "is_autocast_enabled", "get_autocast_dtype"]
