"""``vkml.utils.checkpoint``: PyTorch's activation checkpointing API, ``checkpoint`` and
``checkpoint_sequential``.

PyTorch saves memory by dropping a segment's activations and recomputing them in backward. vkml
runs the segment once and keeps its graph: the values and gradients are the same, the memory
saving is not there (vkml's lazy graph is realized per step, docs/memory.md). What PyTorch's
flags change in results is kept: with ``use_reentrant=True`` (PyTorch's default when the flag
is not given, with its warning) a segment none of whose tensor inputs requires grad returns a
result without a graph — the parameters inside get no gradient — and warns, as PyTorch's does.

>>> import vkml
>>> from vkml.utils.checkpoint import checkpoint
>>> x = vkml.tensor([1.0, 2.0], requires_grad=True)
>>> checkpoint(lambda t: (t * t).sum(), x, use_reentrant=False).item()
5.0
"""

from __future__ import annotations

import warnings

from ..frontend.autograd import no_grad
from ..frontend.autograd_api import _tensor_class

__all__ = ["checkpoint", "checkpoint_sequential"]


def _reentrant(use_reentrant, api: str) -> bool:
    if use_reentrant is None:
        warnings.warn(
            f"{api}: the use_reentrant parameter should be passed explicitly. In version 2.9 we will raise an "
            "exception if use_reentrant is not passed. use_reentrant=False is recommended, but if you need to "
            "preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=3,
        )
        return True
    return bool(use_reentrant)


def checkpoint(
    function,
    *args,
    use_reentrant: bool | None = None,
    context_fn=None,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    preserve_rng_state: bool = True,
    **kwargs,
):
    """``function(*args, **kwargs)``, as ``torch.utils.checkpoint.checkpoint`` computes it (see the module text).

    >>> import vkml
    >>> layer = vkml.nn.Linear(2, 1)
    >>> out = vkml.utils.checkpoint.checkpoint(layer, vkml.ones(2), use_reentrant=False)
    >>> out.requires_grad
    True
    """
    reentrant = _reentrant(use_reentrant, "torch.utils.checkpoint")
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    if reentrant:
        if context_fn is not None or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        tensor = _tensor_class()
        if not any(isinstance(a, tensor) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
            with no_grad():
                return function(*args)
        return function(*args)
    if context_fn is not None:
        forward_context, _ = context_fn()
        with forward_context:
            return function(*args, **kwargs)
    return function(*args, **kwargs)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs):
    """Run ``functions`` (a Sequential or a list of modules) in order on ``input``, each of ``segments``
    chunks but the last through ``checkpoint``, as ``torch.utils.checkpoint.checkpoint_sequential``.

    >>> import vkml, vkml.nn as nn
    >>> seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    >>> vkml.utils.checkpoint.checkpoint_sequential(seq, 2, vkml.ones(2), use_reentrant=False).shape
    vkml.Size([1])
    """
    reentrant = _reentrant(use_reentrant, "torch.utils.checkpoint.checkpoint_sequential")
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if hasattr(functions, "children") and callable(functions.children):
        functions = list(functions.children())
    functions = list(functions)

    def run(start: int, end: int):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
