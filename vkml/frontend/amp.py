"""Automatic mixed precision: ``vkml.autocast`` / ``vkml.amp.autocast`` and ``vkml.amp.GradScaler``.

Inside ``autocast(device_type, dtype=...)``, ops called on tensors of that device type
run in the precision PyTorch's autocast gives them on that device type (the CUDA lists are below,
the CPU ones after them), with ``dtype`` (float16 or bfloat16) the
lower precision:

- ``LOWER`` (matmul, linear, convolutions, bmm, addmm, ...): float32, float16 and bfloat16 tensor
  arguments are cast to the lower dtype, so the op runs — and returns — in it (float64 ones are
  left alone, as PyTorch leaves them);
- ``FLOAT32`` (exp, log, pow, norms, layer/group norm, losses, ...): float16 and bfloat16 arguments
  are cast to float32; ``FLOAT32_UNLESS_DTYPE`` (softmax, log_softmax, sum, prod, cumsum, cumprod) the same
  unless the call names a ``dtype``;
- ``BANNED`` (``binary_cross_entropy``): raises PyTorch's error (use the ``with_logits`` form);
- every other op runs in its inputs' dtype (with the usual promotion), as PyTorch's do.

Like PyTorch's dispatcher, autocast acts on the op a program calls, not on the ops that op is
built of: each public function (``vkml.*``, ``vkml.nn.functional.*``, ``vkml.autograd.*``) and
``Tensor`` method is wrapped once, at import (``install``), and while one runs autocast is off
for the ops inside it. ``nn`` modules are Python code calling those functions, so their ops
autocast one by one, as PyTorch's do. ``backward()`` runs with autocast off. Weights (leaves that
require grad) are cast once per autocast region (``cache_enabled``).

Each device type has PyTorch's lists for it: ``"vulkan"`` (``"cuda"``) the CUDA ones above,
``"cpu"`` PyTorch's CPU ones (``CPU_LOWER``, ``CPU_FLOAT32``: no float32-unless-dtype list, nothing
banned, ``exp``, ``softmax``, ``layer_norm``, ``sum`` run in their inputs' dtype, reflection and
replication padding and the 3-d poolings in float32). So an autocast region gives the dtypes PyTorch
gives on that device type, and a CPU run reproduces a Vulkan one bit for bit where the two lists
agree on the ops the program calls (matmuls, linear and convolutions, the losses).
The lower precision is float16 or bfloat16; the default ``dtype`` is PyTorch's, bfloat16 for
``"cpu"`` and float16 for ``"vulkan"`` (``"cuda"``), and another ``dtype`` warns and disables
autocast, as PyTorch's CPU autocast does for a dtype it does not support.

>>> import vkml
>>> w, x = vkml.ones(4, 4, requires_grad=True), vkml.ones(2, 4)
>>> with vkml.autocast(device_type="cpu", dtype=vkml.float16):
...     y = x @ w
...     p = y.softmax(-1)
...     loss = vkml.nn.functional.mse_loss(y, p)
>>> y.dtype, p.dtype, loss.dtype
(vkml.float16, vkml.float16, vkml.float32)
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import warnings

from ..ir import types as T
from ..tensor import Tensor
from .grad_scaler import GradScaler

__all__ = [
    "autocast",
    "GradScaler",
    "custom_bwd",
    "custom_fwd",
    "is_autocast_enabled",
    "get_autocast_dtype",
    "is_autocast_available",
]
# torch.<name> spellings of the state functions (vkml/__init__.py binds them as vkml.<name>)
STATE_FUNCTIONS = (
    "set_autocast_enabled",
    "set_autocast_dtype",
    "is_autocast_cpu_enabled",
    "get_autocast_cpu_dtype",
    "get_autocast_gpu_dtype",
    "is_autocast_cache_enabled",
    "set_autocast_cache_enabled",
    "clear_autocast_cache",
)

DEVICE_TYPES = ("cpu", "vulkan")
# PyTorch's default lower precision per device type: CPU autocast's is bfloat16, CUDA's float16
DEFAULT_DTYPES = {"cpu": T.bfloat16, "vulkan": T.float16}
LOWER_DTYPES = (T.float16, T.bfloat16)


def _device_type(name: str) -> str:
    """ "cuda" names the Vulkan device type, as ``vkml.device("cuda")`` names a Vulkan device."""
    return "vulkan" if name == "cuda" else name


# PyTorch's CUDA autocast lists (aten/src/ATen/autocast_mode.cpp), as far as vkml has the ops.
LOWER = frozenset(
    "matmul mm bmm addmm addmv addr baddbmm addbmm mv einsum chain_matmul linear conv1d conv2d conv3d "
    "conv_transpose1d conv_transpose2d conv_transpose3d prelu scaled_dot_product_attention _conv _conv_transpose "
    "__matmul__ __rmatmul__".split()
)
FLOAT32 = frozenset(
    "acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow __pow__ __rpow__ __rtruediv__ "
    "softplus layer_norm group_norm norm normalize cosine_similarity poisson_nll_loss cosine_embedding_loss "
    "nll_loss hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss mse_loss margin_ranking_loss "
    "multilabel_margin_loss soft_margin_loss triplet_margin_loss multi_margin_loss "
    "binary_cross_entropy_with_logits cross_entropy dist pdist cdist renorm logsumexp".split()
)
FLOAT32_UNLESS_DTYPE = frozenset("softmax softmin log_softmax sum prod cumsum cumprod".split())
BANNED = frozenset(["binary_cross_entropy"])
# PyTorch composes these of matmuls below its dispatcher, so they return the lower dtype under either
# device type's autocast; vkml's are one wrapped op each (the ops inside do not autocast)
COMPOSITE_LOWER = frozenset("tensordot inner matrix_power".split())
# PyTorch's CPU autocast lists (the same file's CPU block), as far as vkml has the ops, names as vkml's
CPU_LOWER = frozenset(
    "matmul mm bmm addmm addbmm baddbmm einsum chain_matmul linear conv1d conv2d conv3d conv_tbc "
    "conv_transpose1d conv_transpose2d conv_transpose3d prelu scaled_dot_product_attention _conv _conv_transpose "
    "__matmul__ __rmatmul__".split()
)
CPU_FLOAT32 = frozenset(
    "avg_pool3d binary_cross_entropy grid_sample polar prod quantile nanquantile stft cdist trace view_as_complex "
    "cholesky cholesky_inverse cholesky_solve inverse lu_solve orgqr ormqr pinverse max_pool3d max_unpool2d "
    "max_unpool3d adaptive_avg_pool3d adaptive_max_pool3d fractional_max_pool2d fractional_max_pool3d mse_loss "
    "cosine_embedding_loss nll_loss hinge_embedding_loss poisson_nll_loss smooth_l1_loss cross_entropy l1_loss "
    "huber_loss margin_ranking_loss soft_margin_loss triplet_margin_loss multi_margin_loss ctc_loss kl_div "
    "multilabel_margin_loss binary_cross_entropy_with_logits geqrf qr svd triangular_solve".split()
)
# F.pad is PyTorch's reflection_pad / replication_pad (CPU float32 list) for those modes, else not listed
_CPU_FLOAT32_PAD_MODES = ("reflect", "replicate")
# Tensor dunders that are ops of the lists; other dunders (+, *, indexing) are single ops that never
# call another public function, so they stay unwrapped (and as fast as they were).
_TENSOR_DUNDERS = ("__matmul__", "__rmatmul__", "__pow__", "__rpow__", "__rtruediv__")
# Methods that record no op, whatever autocast says: left unwrapped (``realize()`` runs after every step)
_UNWRAPPED_METHODS = frozenset(("realize",))


class _State(threading.local):
    """Autocast is per thread, as in PyTorch."""

    def __init__(self):
        self.dtypes: dict = {}  # device type -> lower dtype, for the device types autocast is on for
        self.inside = 0  # > 0 while a wrapped op runs: the ops it is built of do not autocast
        self.cache: dict = {}  # id(weight) -> (weight, its node, the cast), for one outermost region
        self.cache_enabled = True
        self.configured: dict = {}  # device type -> set_autocast_dtype's dtype (also while autocast is off)


_state = _State()


def is_autocast_enabled(device_type: str = "vulkan") -> bool:
    """Whether autocast is on for ``device_type`` in this thread."""
    return _device_type(device_type) in _state.dtypes


def get_autocast_dtype(device_type: str) -> T.DType:
    """The lower precision dtype autocast uses for ``device_type`` (PyTorch's default: bfloat16 for
    ``"cpu"``, float16 for ``"vulkan"``/``"cuda"``)."""
    device_type = _device_type(device_type)
    found = _state.dtypes.get(device_type)
    if found is not None:
        return found
    return _state.configured.get(device_type, DEFAULT_DTYPES.get(device_type, T.float16))


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can be turned on for ``device_type`` (``torch.amp.is_autocast_available``)."""
    return _device_type(device_type) in DEVICE_TYPES


def _known(device_type: str) -> str:
    device_type = _device_type(device_type)
    if device_type not in DEVICE_TYPES:
        raise RuntimeError(
            f"User specified an unsupported autocast device_type '{device_type}' "
            f"(vkml's device types: {', '.join(DEVICE_TYPES)})"
        )
    return device_type


def set_autocast_enabled(device_type, enabled=None) -> None:
    """Turn autocast on or off for ``device_type`` in this thread, outside any ``with`` (PyTorch's
    ``torch.set_autocast_enabled(device_type, enabled)``; the older one-argument form is CUDA's, here
    the Vulkan device type's). It lasts until set again or an enclosing region ends."""
    if enabled is None:
        device_type, enabled = "vulkan", device_type
    device_type = _known(device_type)
    dtypes = dict(_state.dtypes)  # a new dict: an enclosing region restores its own on exit
    if enabled:
        dtypes[device_type] = get_autocast_dtype(device_type)
    else:
        dtypes.pop(device_type, None)
    _state.dtypes = dtypes


def set_autocast_dtype(device_type: str, dtype) -> None:
    """The lower precision autocast uses for ``device_type`` from now on (``torch.set_autocast_dtype``)."""
    device_type = _known(device_type)
    _state.configured = {**_state.configured, device_type: dtype}
    if device_type in _state.dtypes:
        _state.dtypes = {**_state.dtypes, device_type: dtype}


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    """``is_autocast_enabled("cpu")``, PyTorch's deprecated spelling (with its DeprecationWarning)."""
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def get_autocast_cpu_dtype():
    """``get_autocast_dtype("cpu")``, PyTorch's deprecated spelling (with its DeprecationWarning)."""
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype():
    """``get_autocast_dtype("cuda")``, PyTorch's deprecated spelling (with its DeprecationWarning)."""
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("vulkan")


def is_autocast_cache_enabled() -> bool:
    """Whether autocast regions cast each weight once (``cache_enabled``'s default for new regions)."""
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """``cache_enabled`` for the regions opened from now on, in this thread (``torch.set_autocast_cache_enabled``)."""
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop the weights' casts kept for the current region (PyTorch's ``torch.clear_autocast_cache``)."""
    _state.cache.clear()


class autocast:
    """Run the ops inside in mixed precision (see the module doc); a context manager or a decorator.

    ``device_type`` is ``"cpu"`` or ``"vulkan"`` (the ``kind`` of ``vkml.device``); ``dtype``
    (float16 or bfloat16) defaults to bfloat16 on ``"cpu"`` and float16 on ``"vulkan"``, as in
    PyTorch; ``enabled=False`` turns autocast off inside (also within an outer
    region); ``cache_enabled`` (default True) casts each weight once per region.
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        device_type = _device_type(device_type)
        if device_type not in DEVICE_TYPES:
            raise RuntimeError(
                f"User specified an unsupported autocast device_type '{device_type}' "
                f"(vkml's device types: {', '.join(DEVICE_TYPES)})"
            )
        self.device_type = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._enabled = bool(enabled)
        self._cache_enabled = _state.cache_enabled if cache_enabled is None else bool(cache_enabled)
        if self._enabled and self.fast_dtype not in LOWER_DTYPES:
            warnings.warn(
                f"In {device_type} autocast, but the target dtype is not supported. Disabling autocast.\n"
                f"{device_type} autocast only supports dtypes of vkml.bfloat16, vkml.float16 currently.",
                stacklevel=2,
            )
            self._enabled = False

    def __enter__(self):
        # a region opened inside a wrapped op (a custom_bwd backward runs inside backward()) applies
        # to the ops it contains: they are the program's ops, not the wrapped op's own
        self._previous = (_state.dtypes, _state.cache_enabled, _state.inside)
        dtypes = dict(_state.dtypes)
        if self._enabled:
            dtypes[self.device_type] = self.fast_dtype
        else:
            dtypes.pop(self.device_type, None)
        _state.dtypes, _state.cache_enabled, _state.inside = dtypes, self._cache_enabled, 0
        return self

    def __exit__(self, *exc) -> None:
        _state.dtypes, _state.cache_enabled, _state.inside = self._previous
        if not _state.dtypes:
            _state.cache.clear()  # leaving the outermost region: the casts of weights are dropped

    def __call__(self, func):
        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with autocast(self.device_type, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)

        return decorated


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorator for a custom ``Function.forward`` (``torch.amp.custom_fwd``): it runs in the caller's
    autocast state, or, with ``cast_inputs``, with autocast off and float inputs cast to that dtype
    (when autocast is on). Pair it with ``custom_bwd`` on ``backward``."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        ctx._fwd_used_autocast = is_autocast_enabled(device_type)
        if cast_inputs is None or not ctx._fwd_used_autocast:
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        rule = lambda t: t.to(cast_inputs) if t.dtype.is_float and t.device.kind == device_type else t  # noqa: E731
        cast_args, cast_kwargs = _cast_all(args[1:], kwargs, rule, Tensor)
        with autocast(device_type, enabled=False):
            return fwd(ctx, *cast_args, **cast_kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for a custom ``Function.backward`` (``torch.amp.custom_bwd``): it runs in the autocast
    state its ``custom_fwd`` forward ran in."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type, dtype=ctx._dtype, enabled=ctx._fwd_used_autocast):
            return bwd(*args, **kwargs)

    return decorate_bwd


# ---------------------------------------------------------------------- the wrappers


def _device_dtype(args, kwargs, Tensor) -> tuple:
    """(device type, autocast dtype) for the device of the first tensor argument (dtype None:
    autocast is off there)."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, (list, tuple)):
            value = next((v for v in value if isinstance(v, Tensor)), None)
        if isinstance(value, Tensor):
            kind = value.device.kind
            return kind, _state.dtypes.get(kind)
    return None, None


def _kind(name: str, device_type: str) -> str:
    """What autocast does to op ``name`` on ``device_type``: PyTorch's list for that device type."""
    if name in COMPOSITE_LOWER:
        return "lower"
    if device_type == "cpu":
        if name in CPU_LOWER:
            return "lower"
        if name in CPU_FLOAT32:
            return "float32"
        return "float32_padding" if name == "pad" else "inside"
    if name in LOWER:
        return "lower"
    if name in FLOAT32:
        return "float32"
    if name in FLOAT32_UNLESS_DTYPE:
        return "float32_unless_dtype"
    return "banned" if name in BANNED else "inside"


def _pad_mode(args, kwargs) -> str:
    return kwargs.get("mode", args[2] if len(args) > 2 else "constant")


def _cast(t, dtype):
    if t.dtype is dtype:
        return t
    if _state.cache_enabled and t.is_leaf and t.requires_grad:
        hit = _state.cache.get(id(t))
        if hit is not None and hit[0] is t and hit[1] is t.node:
            return hit[2]
        out = t.to(dtype)
        _state.cache[id(t)] = (t, t.node, out)
        return out
    return t.to(dtype)


def _cast_all(args, kwargs, rule, Tensor):
    def one(v):
        if isinstance(v, Tensor):
            return rule(v)
        if isinstance(v, (list, tuple)) and any(isinstance(x, Tensor) for x in v):
            return type(v)(rule(x) if isinstance(x, Tensor) else x for x in v)
        return v

    return tuple(one(a) for a in args), {k: one(v) for k, v in kwargs.items()}


def _wrap(fn, name: str):
    """``fn`` with its autocast rule (from its name's list for each device type) and autocast off for
    the ops inside it."""
    kinds = {device_type: _kind(name, device_type) for device_type in DEVICE_TYPES}
    listed = any(kind != "inside" for kind in kinds.values())

    @functools.wraps(fn)
    def autocast_op(*args, **kwargs):
        state = _state
        if not state.dtypes or state.inside:
            return fn(*args, **kwargs)
        device_type, dtype = _device_dtype(args, kwargs, Tensor) if listed else (None, None)
        if dtype is not None:
            kind = kinds[device_type]
            if kind == "float32_padding":
                kind = "float32" if _pad_mode(args, kwargs) in _CPU_FLOAT32_PAD_MODES else "inside"
            if kind == "lower":
                # PyTorch's is_eligible: a float tensor other than float64
                args, kwargs = _cast_all(
                    args,
                    kwargs,
                    lambda t: _cast(t, dtype) if t.dtype.is_float and t.dtype is not T.float64 else t,
                    Tensor,
                )
            elif kind == "float32" or (kind == "float32_unless_dtype" and kwargs.get("dtype") is None):
                args, kwargs = _cast_all(
                    args, kwargs, lambda t: _cast(t, T.float32) if t.dtype in LOWER_DTYPES else t, Tensor
                )
            elif kind == "banned":
                raise RuntimeError(
                    f"torch.nn.functional.{name} and torch.nn.BCELoss are unsafe to autocast.\n"
                    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
                    "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
                    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
                    "safe to autocast."
                )
        state.inside += 1
        try:
            return fn(*args, **kwargs)
        finally:
            state.inside -= 1

    autocast_op.__wrapped_by_autocast__ = True
    return autocast_op


# id(function) -> its autocast wrapper, for every function wrapped so far: an alias gets the wrapper of
# the function it names, whenever its namespace is wrapped (the originals live on in their wrappers).
_wrappers: dict[int, object] = {}
# Namespaces that loaded before ``install`` ran (wrapped by it, after vkml's own, so names stay vkml's).
_early_namespaces: list = []
_installed = False


def _wrapper_of(fn, name: str):
    if getattr(fn, "__wrapped_by_autocast__", False):
        return fn
    key = id(fn)
    if key not in _wrappers:
        _wrappers[key] = _wrap(fn, name)
    return _wrappers[key]


def _wrap_namespace(module) -> None:
    for name in list(getattr(module, "__all__", None) or vars(module)):
        fn = getattr(module, name, None)
        if name.startswith("_") or not inspect.isfunction(fn):
            continue
        setattr(module, name, _wrapper_of(fn, name))


def install(namespaces: list, tensor_class, extra: list) -> None:
    """Wrap every public function of ``namespaces`` and every public method of ``tensor_class``
    (plus the list dunders and ``extra`` (module, name) pairs), once; aliases share one wrapper."""
    global _installed
    namespaces = [*namespaces, *(module for module, _ in _early_namespaces)]
    extra = [*extra, *(pair for _, pairs in _early_namespaces for pair in pairs)]
    for module in namespaces:
        _wrap_namespace(module)
    for module, name in extra:
        setattr(module, name, _wrapper_of(getattr(module, name), name))
    for name, fn in list(vars(tensor_class).items()):
        if name in _UNWRAPPED_METHODS:
            continue
        if inspect.isfunction(fn) and (not name.startswith("_") or name in _TENSOR_DUNDERS):
            setattr(tensor_class, name, _wrapper_of(fn, name))
    for module in namespaces:
        _name_where_installed(module)
    _installed = True


def install_namespace(module, extra: list) -> None:
    """Wrap a namespace that loads after ``import vkml`` (vkml.nn.functional, on first use), as
    ``install`` wraps vkml's: a function it shares with vkml gets the wrapper vkml has."""
    if not _installed:  # loaded while vkml/__init__.py runs: install() takes it
        _early_namespaces.append((module, extra))
        return
    _wrap_namespace(module)
    for owner, name in extra:
        setattr(owner, name, _wrapper_of(getattr(owner, name), name))
    _name_where_installed(module)


def _name_where_installed(module) -> None:
    """Give each public function of ``module`` that pickle cannot find by its own name (a wrapper keeps the
    name of the function it wraps, defined elsewhere) the module and name it is installed under, so
    that a model holding ``F.relu`` or ``torch.tanh`` pickles it by reference, as PyTorch's do."""
    for name in list(getattr(module, "__all__", None) or vars(module)):
        fn = getattr(module, name, None)
        if name.startswith("_") or not inspect.isfunction(fn):
            continue
        home = sys.modules.get(fn.__module__)
        if home is None or getattr(home, fn.__qualname__, None) is not fn:
            fn.__module__, fn.__qualname__ = module.__name__, name
