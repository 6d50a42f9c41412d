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
from .dsl.elementwise import elementwise
from .dsl.kernel import kernel
from .errors import CompileError, DeviceError, DTypeError, OutOfMemoryError, ShapeError
from .frontend.autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .frontend.devices import best_device, device, get_default_device, set_default_device, vulkan_device_reports
from .frontend.random import Generator, manual_seed
from .frontend.realize import realize, set_eager
from .frontend.serialization import load, save
from .frontend.version import __version__  # noqa: F401  (torch.__version__: the PyTorch release followed)
from .ir.types import bool_ as bool  # noqa: A001
from .ir.types import float16, float32, int32, int64
from .tensor import Tensor

half = float16
float = float32  # noqa: A001
long = int64
int = int32  # noqa: A001

__all__ = [
    "Tensor",
    "elementwise",
    "kernel",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "manual_seed",
    "Generator",
    "device",
    "best_device",
    "get_default_device",
    "set_default_device",
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
]

# ---------------------------------------------------------------------- vkml.linalg and vkml.return_types
# (PyTorch's namespaces for the ops of vkml/frontend/statistics.py, scans.py, selection.py, sorting.py)
import sys as _sys  # noqa: E402

from .frontend import linalg, return_types  # noqa: E402

_sys.modules[__name__ + ".linalg"] = linalg  # `import vkml.linalg` finds the namespace
_sys.modules[__name__ + ".return_types"] = return_types
__all__ += ["linalg", "return_types"]
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
# ---------------------------------------------------------------------- PyTorch programs' surroundings
# (issue 19): numpy/DLPack interop, "cuda" device names and torch.cuda's functions, torch.backends'
# switches, matmul precision, determinism, compile, testing (docs/interop.md, docs/devices.md).
from .frontend import compat as _compat  # noqa: E402
from .frontend import compiler, cuda, profiler, testing, version  # noqa: E402
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
_faces = (("cuda", cuda), ("testing", testing), ("backends", backends), ("profiler", profiler))
_faces += (("compiler", compiler), ("version", version))  # torch.compiler's decorators, torch.version's strings
from .frontend import serialization  # noqa: E402  (torch.serialization: save, load and the safe globals)

_faces += (("serialization", serialization),)
for _module_name, _module in _faces:
    _sys.modules[f"{__name__}.{_module_name}"] = _module  # `import vkml.cuda` finds the namespace
for _module_name in ("cudnn", "cuda", "mps"):
    _sys.modules[f"{__name__}.backends.{_module_name}"] = getattr(backends, _module_name)
del _module_name, _module, _faces
from .frontend import dynamo as _dynamo  # noqa: E402  (torch._dynamo, torch._inductor.config: vkml/frontend/dynamo.py)

_inductor = _dynamo.inductor_package
_sys.modules[__name__ + "._inductor"] = _inductor
_sys.modules[__name__ + "._dynamo"] = _dynamo
_sys.modules[__name__ + "._dynamo.config"] = _dynamo.config
_sys.modules[__name__ + "._inductor.config"] = _dynamo.inductor_config
from .frontend.size import Size  # noqa: E402
from .ir.types import DType as dtype  # noqa: E402  (isinstance(x.dtype, vkml.dtype), as torch.dtype)

__all__ += ["Size", "dtype"]
__all__ += [
    "cuda",
    "compiler",
    "version",
    "serialization",
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
from .frontend.dtypes import promote_types  # noqa: E402
from .frontend.type_queries import result_type  # noqa: E402
from .ir.types import bfloat16, float64, int8, int16, uint8  # noqa: E402

double = float64
short = int16
__all__ += ["float64", "double", "uint8", "int8", "int16", "short", "bfloat16", "promote_types", "result_type"]
# ---------------------------------------------------------------------- autograd namespace and grad modes
# (vkml/frontend/autograd_api.py: vkml.autograd.grad / backward / Function, as torch.autograd)
from .frontend import autograd_api as autograd  # noqa: E402
from .frontend.autograd import inference_mode, is_inference, is_inference_mode_enabled  # noqa: E402

_sys.modules[__name__ + ".autograd"] = autograd  # `import vkml.autograd` finds the namespace
__all__ += ["autograd", "inference_mode", "is_inference", "is_inference_mode_enabled"]
# ---------------------------------------------------------------------- default dtype and type predicates
# (vkml/frontend/defaults.py, type_queries.py)
from .frontend.defaults import get_default_dtype, set_default_dtype  # noqa: E402
from .frontend.type_queries import is_floating_point, is_tensor  # noqa: E402

__all__ += ["get_default_dtype", "set_default_dtype", "is_tensor", "is_floating_point"]

# ---------------------------------------------------------------------- vkml.special (vkml/frontend/transcendental.py)
from .frontend import transcendental as _transcendental  # noqa: E402

special = _transcendental.special
_sys.modules[__name__ + ".special"] = special  # `import vkml.special` finds the namespace
__all__ += ["special"]

# ---------------------------------------------------------------------- printing (vkml/frontend/printing.py)
from .frontend.printing import set_printoptions  # noqa: E402

__all__ += ["set_printoptions"]

# ---------------------------------------------------------------------- the default generator's state (vkml/frontend/rng_state.py)
from .frontend.rng_state import get_rng_state, set_rng_state  # noqa: E402

__all__ += ["get_rng_state", "set_rng_state"]

# ---------------------------------------------------------------------- lazy submodules
# vkml.nn (layers, losses, functional), vkml.optim (SGD, Adam, AdamW) and vkml.utils (utils.data:
# datasets, samplers, DataLoader) load on first use: `vkml.nn.Linear`, `import vkml.nn` and
# `from vkml import nn` all work after `import vkml`. A first tensor op needs none of them, and
# they (with multiprocessing, which the DataLoader imports) were a third of `import vkml`
# (bench/bench_cold_start.py measures it).
import importlib as _importlib  # noqa: E402

_LAZY_SUBMODULES = (
    "nn",
    "optim",
    "utils",
    "distributions",
    "distributed",
    "multiprocessing",
    "hub",
    "ao",
    "quantization",
    "onnx",
)
# PyTorch's quantized dtypes and tensor makers: vkml cannot quantize (vkml/ao/quantization.py) and says so
_QUANTIZED_NAMES = ("qint8", "quint8", "qint32", "quint4x2", "quint2x4", "quantize_per_tensor", "quantize_per_channel")


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")  # lazy: off import vkml's path (binds vkml.<name>)
    if name in _QUANTIZED_NAMES:
        raise AttributeError(
            f"module {__name__!r} has no attribute {name!r}: vkml has no quantized tensors (docs/interop.md)"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_SUBMODULES))


# ---------------------------------------------------------------- dtype limits (vkml/frontend/dtype_info.py)
from .frontend.dtype_info import can_cast, finfo, iinfo  # noqa: E402

# uint16: movement, conversion, creation and PyTorch's few ops; uint32, uint64: dtype objects without
# tensors (docs/dtypes.md)
from .ir.types import uint16, uint32, uint64  # noqa: E402

__all__ += ["can_cast", "finfo", "iinfo", "uint16", "uint32", "uint64"]

# ---------------------------------------------------------------------- capture and replay (vkml/frontend/jit.py)
from .frontend.jit import JitError, jit  # noqa: E402

__all__ += ["jit", "JitError"]


# ---------------------------------------------------------------------- function transforms, torch.cuda.amp
# (vkml/frontend/autograd_functional.py: vkml.autograd.functional; vkml/frontend/func.py: vkml.func)
from .frontend import autograd_functional as _autograd_functional  # noqa: E402
from .frontend import cuda_amp as _cuda_amp  # noqa: E402
from .frontend import cuda_memory as _cuda_memory  # noqa: E402
from .frontend import func  # noqa: E402
from .frontend.func import vmap  # noqa: E402

autograd.functional = _autograd_functional
from .frontend import autograd_graph as _autograd_graph  # noqa: E402

autograd.graph = _autograd_graph  # torch.autograd.graph: saved-tensor hooks (vkml/frontend/autograd_graph.py)
_sys.modules[__name__ + ".autograd.graph"] = _autograd_graph
from .frontend import autograd_profiler as _autograd_profiler  # noqa: E402

autograd.profiler = _autograd_profiler  # torch.autograd.profiler: the older profiler's names
_sys.modules[__name__ + ".autograd.profiler"] = _autograd_profiler
cuda.amp = _cuda_amp  # torch.cuda.amp's older spellings
_sys.modules[__name__ + ".cuda.amp"] = _cuda_amp
cuda.memory = _cuda_memory  # torch.cuda.memory's names (vkml/frontend/cuda_memory.py)
_sys.modules[__name__ + ".cuda.memory"] = _cuda_memory
_sys.modules[__name__ + ".autograd.functional"] = _autograd_functional
_sys.modules[__name__ + ".func"] = func
__all__ += ["func", "vmap"]

# vkml.autograd.forward_ad (vkml/frontend/forward_ad.py): dual tensors, tangents by the double backward trick
from .frontend import forward_ad as _forward_ad  # noqa: E402

autograd.forward_ad = _forward_ad
_sys.modules[__name__ + ".autograd.forward_ad"] = _forward_ad


# ---------------------------------------------------------------- vkml.accelerator and vkml.xpu
# (vkml/frontend/accelerator.py: the device-agnostic check pytorch/examples' programs start with)
from .frontend.accelerator import accelerator, xpu  # noqa: E402

_sys.modules[__name__ + ".accelerator"] = accelerator
_sys.modules[__name__ + ".xpu"] = xpu
__all__ += ["accelerator", "xpu"]


# ---------------------------------------------------------------- vkml.cpu and vkml.cpu.amp
# (vkml/frontend/cpu.py: torch.cpu's device-agnostic answers; cpu_amp.py: its deprecated amp spellings)
from .frontend import cpu  # noqa: E402
from .frontend import cpu_amp as _cpu_amp  # noqa: E402

cpu.amp = _cpu_amp
_sys.modules[__name__ + ".cpu"] = cpu
_sys.modules[__name__ + ".cpu.amp"] = _cpu_amp
__all__ += ["cpu"]


# ---------------------------------------------------------------- complex dtypes (docs/complex.md)
from .ir.types import complex64, complex128  # noqa: E402

cfloat = complex64
cdouble = complex128
__all__ += ["complex64", "cfloat", "complex128", "cdouble"]


# ---------------------------------------------------------------- vkml.sparse (sparse COO tensors: docs/sparse.md)
# and vkml.fft (docs/fft.md)
from .frontend import fft, sparse  # noqa: E402

_sys.modules[__name__ + ".sparse"] = sparse
_sys.modules[__name__ + ".fft"] = fft
__all__ += ["sparse", "fft"]


# ---------------------------------------------------------------- vkml.autograd.function (once_differentiable)
from .frontend import autograd_function as _autograd_function  # noqa: E402

autograd.function = _autograd_function
_sys.modules[__name__ + ".autograd.function"] = _autograd_function


# ---------------------------------------------------------------------- the public ops, then autocast
# KEEP THIS BLOCK LAST. Every op is bound here, from the ``EXPORTS`` of the modules that define it
# (vkml/frontend/public.py): vkml.<name> (``tensor`` replaces the submodule vkml.tensor), __all__,
# the Tensor methods and their in-place forms. Autocast then wraps the public functions bound above,
# the Tensor methods (and nn.functional's when vkml.nn loads: vkml/nn/__init__.py); a function bound
# after it would escape the wrapping (tests/test_amp.py checks that nothing does).
from .frontend import amp  # noqa: E402
from .frontend import complex as _complex  # noqa: E402
from .frontend import out_arg as _out_arg  # noqa: E402
from .frontend import public as _public  # noqa: E402
from .frontend.amp import autocast, get_autocast_dtype, is_autocast_enabled  # noqa: E402

__all__ += _public.install(globals(), Tensor)
_complex.install(globals(), Tensor)  # complex operands and dtype= reach vkml/frontend/complex.py
_out_arg.install(globals())  # PyTorch's out= keyword on the functions that take it
_sys.modules[__name__ + ".amp"] = amp  # `import vkml.amp` finds the namespace
amp.install([_sys.modules[__name__], autograd], Tensor, [])
__all__ += ["amp", "autocast", "is_autocast_enabled", "get_autocast_dtype"]
for _name in amp.STATE_FUNCTIONS:  # torch.set_autocast_enabled, ...: state, not ops (not wrapped)
    globals()[_name] = getattr(amp, _name)
__all__ += list(amp.STATE_FUNCTIONS)

# ---------------------------------------------------------------------- torch.random (vkml/frontend/torch_random.py)
from .frontend import torch_random as random  # noqa: E402
from .frontend.torch_names import _assert, _sample_dirichlet  # noqa: E402, F401  (outside __all__ as in torch)

_sys.modules[f"{__name__}.random"] = random  # `import vkml.random` finds the namespace
