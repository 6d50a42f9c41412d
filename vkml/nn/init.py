"""``vkml.nn.init``: PyTorch's initialisers, in place, from vkml's random generator.

Each function gives the tensor new values in place (the same object, so a Parameter an
optimizer holds changes too) and returns it. Fans, gains, bounds and errors are PyTorch's;
the random values come from ``vkml.manual_seed``'s generator (or ``generator=``), which is
PyTorch's CPU generator (vkml/frontend/random.py): each initialiser makes PyTorch's calls in
PyTorch's order, so a module built after ``manual_seed(s)`` has the initial weights PyTorch's
has, bit for bit (``uniform_``, ``normal_``, ``xavier_*``, ``kaiming_*``, ``sparse_``), on every
device; ``trunc_normal_`` follows PyTorch 2.12's rejection sampler (older PyTorch releases
used the inverse CDF, with other values). ``orthogonal_`` draws PyTorch's normals and takes numpy's
float32 QR on the host (vkml has no QR), which may differ from PyTorch's LAPACK in the last bits.

>>> import vkml
>>> w = vkml.nn.Parameter(vkml.zeros(4, 3))
>>> vkml.nn.init.kaiming_uniform_(w, a=5**0.5) is w
True
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import DTypeNotImplementedError
from ..frontend import creation, mt19937
from ..frontend import random as _random
from ..frontend.random import Generator
from ..tensor import Tensor
from .module import _set_data

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "trunc_normal_",
    "constant_",
    "ones_",
    "zeros_",
    "eye_",
    "dirac_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
    "sparse_",
]

_LINEAR_FNS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (``torch.nn.init.calculate_gain``).

    >>> calculate_gain("relu") == 2**0.5
    True
    """
    if nonlinearity in _LINEAR_FNS or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out): dims 1 and 0 times the receptive field (the product of dims 2 and up)."""
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _check_float(op: str, tensor: Tensor) -> None:
    if not tensor.dtype.is_float:  # PyTorch's kernels raise NotImplementedError for the dtype
        raise DTypeNotImplementedError(
            f"{op}: random initialisation needs a floating point tensor, this one is {tensor.dtype.name}"
        )


def _fill(tensor: Tensor, values: Tensor) -> Tensor:
    """Give ``tensor`` the float32 ``values`` (cast to its dtype) in place."""
    return _set_data(tensor, values.to(tensor.dtype))


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Values uniform in [a, b): PyTorch's ``uniform_`` draw (``a + (b - a)·u``, fused in float32)."""
    _check_float("uniform_", tensor)
    return _fill(tensor, _random.uniform_values("uniform_", tensor.shape, a, b, tensor.dtype, tensor.device, generator))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Values normal with ``mean`` and ``std``: PyTorch's ``normal_`` draw."""
    _check_float("normal_", tensor)
    return _fill(
        tensor, _random.normal_values("normal_", tensor.shape, mean, std, tensor.dtype, tensor.device, generator)
    )


def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator: Generator | None = None,
) -> Tensor:
    """Normal values with ``mean`` and ``std`` truncated to [a, b]: PyTorch's rejection sampler
    (PyTorch 2.12 and later; ``vkml.frontend.mt19937.trunc_normal``), drawn on the host in the tensor's
    dtype, as PyTorch's tensor ops compute it."""
    _check_float("trunc_normal_", tensor)
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
            "The distribution of values may be incorrect.",
            stacklevel=2,
        )
    values = _random.host_draw(
        "trunc_normal_",
        tensor.shape,
        tensor.dtype,
        tensor.device,
        generator,
        mt19937.trunc_normal,
        mean,
        std,
        a,
        b,
        tensor.dtype.name,
    )
    return _fill(tensor, values)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Every element ``val``."""
    return _set_data(tensor, creation.full(tensor.shape, val, dtype=tensor.dtype, device=tensor.device))


def ones_(tensor: Tensor) -> Tensor:
    """Every element 1."""
    return constant_(tensor, 1)


def zeros_(tensor: Tensor) -> Tensor:
    """Every element 0."""
    return constant_(tensor, 0)


def _from_host(tensor: Tensor, values: np.ndarray) -> Tensor:
    return _set_data(tensor, creation.tensor(values, dtype=tensor.dtype, device=tensor.device))


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix (a 2-D tensor only; ones on the main diagonal of a rectangular one)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _from_host(tensor, np.eye(*tensor.shape, dtype=np.float32))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """The Dirac delta for a 3-, 4- or 5-D convolution weight: each group keeps its input channels' identity."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    values = np.zeros(sizes, np.float32)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min(out_per_group, sizes[1])):
            values[(g * out_per_group + d, d, *centre)] = 1
    return _from_host(tensor, values)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Uniform in ±gain·sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Normal with std gain·sqrt(2 / (fan_in + fan_out)) (Glorot & Bengio)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float | None:
    """The std Kaiming asks for, or None for a tensor with no elements (PyTorch warns and leaves it)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """Uniform in ±gain·sqrt(3 / fan) (He et al.); ``a`` is the leaky ReLU's negative slope.

    >>> w = kaiming_uniform_(vkml.zeros(8, 4), nonlinearity="relu")
    >>> float(w.abs().max()) <= (6 / 4) ** 0.5
    True
    """
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """Normal with std gain / sqrt(fan) (He et al.)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Generator | None = None) -> Tensor:
    """A (semi-)orthogonal matrix over dim 0 and the rest flattened, times ``gain`` (Saxe et al.).

    As PyTorch: QR of a standard normal (rows x cols) matrix (transposed when rows < cols),
    Q's columns signed by R's diagonal. The normal draws are the generator's; the QR runs on
    the host in float64 with numpy, since vkml has no QR.
    """
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    _check_float("orthogonal_", tensor)
    if tensor.numel() == 0 or tensor.device.kind == "meta":  # meta: no values, no draws (PyTorch's)
        return tensor
    if tensor.dtype.itemsize == 2:  # PyTorch's QR has no float16 or bfloat16 kernel
        name = "Half" if tensor.dtype.name == "float16" else "BFloat16"
        raise NotImplementedError(f"orthogonal_: \"geqrf_cpu\" not implemented for '{name}'")
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    # the normal draws in the tensor's dtype (float64 draws otherwise), as PyTorch's
    flattened = _random.normal_values("normal_", (rows, cols), 0.0, 1.0, tensor.dtype, "cpu", generator).numpy()
    if rows < cols:
        flattened = flattened.T
    q, r = np.linalg.qr(flattened)  # in the tensor's float32 or float64, as PyTorch's
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _from_host(tensor, (q * q.dtype.type(gain)).reshape(tensor.shape))


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Generator | None = None) -> Tensor:
    """A 2-D tensor normal with ``std``, with ``ceil(sparsity·rows)`` zeros in each column (Martens).

    As PyTorch: ``normal_(0, std)``, then per column a ``randperm(rows)`` of the default generator
    (PyTorch ignores ``generator`` there too) whose first entries are the rows zeroed.
    """
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    _check_float("sparse_", tensor)
    if tensor.device.kind == "meta":  # no values, no draws (PyTorch's)
        return tensor
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    # the normal draws in the tensor's dtype (float64 and float16 draw otherwise), as PyTorch's
    values = _random.normal_values("normal_", (rows, cols), 0.0, std, tensor.dtype, "cpu", generator).float()
    values = values.double().numpy() if tensor.dtype.name == "float64" else values.numpy()
    for col in range(cols):
        order = _random.default_generator.draw(mt19937.randperm, rows)
        values[order[:num_zeros], col] = 0
    return _from_host(tensor, values)


# ---------------------------------------------------------------- the deprecated names without "_"
# Older programs (pytorch/examples' siamese network: `nn.init.xavier_uniform(m.weight)`) still call
# them; as PyTorch's, each warns (FutureWarning) that it is deprecated and does what the "_" form does.


def _deprecated(new):
    old = new.__name__[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(
            f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new.__name__}`.", FutureWarning, stacklevel=2
        )
        return new(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old
    deprecated_init.__doc__ = f"Deprecated: warns, then ``{new.__name__}``."
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
__all__ += ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal"]
__all__ += ["kaiming_uniform", "kaiming_normal", "orthogonal"]
sparse = _deprecated(sparse_)
__all__ += ["sparse"]
