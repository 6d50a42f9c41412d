"""Helpers shared by the distributions, as ``torch.distributions.utils``."""

from __future__ import annotations

from numbers import Number

import vkml as _vk


def _size(shape) -> _vk.Size:
    """``shape`` as a ``vkml.Size``: a tuple sum of two Sizes is a plain tuple."""
    return _vk.Size(tuple(shape))


def broadcast_all(*values):
    """Numbers become tensors (the first tensor's dtype and device, else the default dtype) and all broadcast together.

    >>> import vkml
    >>> from vkml.distributions.utils import broadcast_all
    >>> [tuple(v.shape) for v in broadcast_all(vkml.zeros(2, 1), 1.0, vkml.ones(3))]
    [(2, 3), (2, 3), (2, 3)]
    """
    if not all(isinstance(v, (_vk.Tensor, Number)) for v in values):
        raise ValueError(
            "Input arguments must all be instances of numbers.Number, torch.Tensor or objects implementing __torch_function__."
        )
    first = next((v for v in values if isinstance(v, _vk.Tensor)), None)
    if first is None:
        options = {"dtype": _vk.get_default_dtype()}
    else:
        options = {"dtype": first.dtype, "device": first.device}
    tensors = [v if isinstance(v, _vk.Tensor) else _vk.tensor(v, **options) for v in values]
    return _vk.broadcast_tensors(*tensors)


def set_loc_scale(dist, loc, scale) -> _vk.Size:
    """``dist.loc`` and ``dist.scale`` broadcast together; the batch shape (``()`` for two numbers),
    as the location-scale families (Normal, Laplace, Cauchy) set them up."""
    dist.loc, dist.scale = broadcast_all(loc, scale)
    return _vk.Size() if isinstance(loc, Number) and isinstance(scale, Number) else dist.loc.size()


def expand_loc_scale(dist, cls, batch_shape, _instance):
    """``dist.expand(batch_shape)`` for a location-scale family ``cls`` (PyTorch's checks of subclasses)."""
    new = dist._get_checked_instance(cls, _instance)
    batch_shape = _size(batch_shape)
    new.loc = dist.loc.expand(batch_shape)
    new.scale = dist.scale.expand(batch_shape)
    super(cls, new).__init__(batch_shape, validate_args=False)
    new._validate_args = dist._validate_args
    return new


def _standard_normal(shape, dtype, device):
    return _vk.randn(tuple(shape), dtype=dtype, device=device)


def _sum_rightmost(value, dim: int):
    """Sum out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[: value.dim() - dim]) + (-1,)).sum(-1)


def clamp_probs(probs):
    """Probabilities clamped into [eps, 1 - eps] of their dtype, so their logarithms are finite."""
    eps = _vk.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary: bool = False):
    """Probabilities from logits: sigmoid for binary, softmax over the last dimension otherwise."""
    if is_binary:
        return _vk.sigmoid(logits)
    return _vk.softmax(logits, dim=-1)


def probs_to_logits(probs, is_binary: bool = False):
    """Logits from probabilities (clamped first): log-odds for binary, log-probabilities otherwise."""
    clamped = clamp_probs(probs)
    if is_binary:
        return _vk.log(clamped) - _vk.log1p(-clamped)
    return _vk.log(clamped)


class lazy_property:
    """A property computed on first access (with gradients recorded) and then stored on the instance."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with _vk.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What a ``lazy_property`` is on the class: documentation tools see a property."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag: int = 0):
    """The lower triangle (from diagonal ``diag``) of the last two dimensions, row by row, as a vector."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = _vk.tril_indices(n, n, offset=diag).unbind(0)
    return mat[..., rows, cols]


def vec_to_tril_matrix(vec, diag: int = 0):
    """A batch of D x D lower triangular matrices (from diagonal ``diag``) filled row by row from ``vec``."""
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > _vk.finfo(vec.dtype).eps:
        raise ValueError(
            f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as "
            "the lower triangular part of a square D x D matrix."
        )
    n = round(n)
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    rows, cols = _vk.tril_indices(n, n, offset=diag).unbind(0)
    mat[..., rows, cols] = vec
    return mat
