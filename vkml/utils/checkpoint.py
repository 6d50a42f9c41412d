"""``vkml.utils.checkpoint``: PyTorch's activation checkpointing API, ``checkpoint`` and
``checkpoint_sequential``.

PyTorch saves memory by dropping a segment's activations and recomputing them in backward. vkml
runs the segment once and keeps its graph: the values and gradients are the same, the memory
saving is not there (vkml's lazy graph is realized per step, docs/memory.md). What PyTorch's
flags change in results is kept: with ``use_reentrant=True`` (PyTorch's default when the flag
is not given, with its warning) a segment none of whose tensor inputs requires grad returns a
result without a graph — the parameters inside get no gradient — and warns, as PyTorch's does.

PyTorch's recomputation is visible beyond the memory: the segment runs a second time when
backward reaches it, so its side effects happen twice — a BatchNorm in training mode updates its
running statistics (and ``num_batches_tracked``) again, forward hooks fire again. vkml replays
the segment at the same moment (a hook on its outputs' gradients), with the random state and
autocast state of the forward restored for the replay and the random state put back after it, as
PyTorch does (with ``preserve_rng_state=False`` the replay draws from the generator as it is, and
advances it, as PyTorch's; PyTorch's gradient then uses the replay's dropout mask, vkml's the
forward's, since vkml differentiates the forward's graph); the replay's results are dropped, so the lazy graph computes only what its side
effects write. PyTorch's non-reentrant replay stops once the segment's last saved tensor is
recomputed (``early_stop``, and ``set_checkpoint_early_stop``), inside the op that saves it, and
does not happen when the segment saved none; vkml's stops at the same op: the forward counts the
ops the segment records and notes the last one PyTorch saves a tensor for (not an add, a view, a
cat, a sum or a product by a number), the replay stops inside that one. So the forward hooks that
fire again are PyTorch's: those of the modules that return before it, not the checkpointed
module's own. The reentrant replay runs the whole segment, as PyTorch's.

>>> import vkml
>>> from vkml.utils.checkpoint import checkpoint
>>> x = vkml.tensor([1.0, 2.0], requires_grad=True)
>>> checkpoint(lambda t: (t * t).sum(), x, use_reentrant=False).item()
5.0
"""

from __future__ import annotations

import contextlib
import warnings

from ..frontend import amp, autograd, random
from ..frontend.autograd import enable_grad, no_grad
from ..frontend.autograd_api import _tensor_class

__all__ = ["checkpoint", "checkpoint_sequential", "set_checkpoint_early_stop"]

# the ops whose PyTorch backward saves no tensor (a product or quotient by a Python number neither):
# PyTorch's early stop does not wait for them
_SAVES_NOTHING = frozenset("add sub neg reshape permute expand flip slice pad cat clone cast to_device sum".split())
_early_stop_override: list = [None]  # set_checkpoint_early_stop's value, None outside it


class _StopRecompute(Exception):
    """Raised inside the replay at the op that saves the segment's last tensor."""


def _saves(name: str, operands) -> bool:
    if name in _SAVES_NOTHING:
        return False
    tensor = _tensor_class()
    return not (name in ("mul", "div") and not all(isinstance(o, tensor) for o in operands))


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Within it, non-reentrant checkpoints stop (or, False, do not stop) their replay at the last saved
    tensor, whatever their ``early_stop`` argument says, as ``torch.utils.checkpoint.set_checkpoint_early_stop``."""
    previous, _early_stop_override[0] = _early_stop_override[0], bool(enable)
    try:
        yield
    finally:
        _early_stop_override[0] = previous


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
        return _replayed_in_backward(function, args, {}, preserve_rng_state, contextlib.nullcontext, None)
    if _early_stop_override[0] is not None:
        early_stop = _early_stop_override[0]
    if context_fn is not None:
        forward_context, recompute_context = context_fn()
        with forward_context:
            return _replayed_in_backward(
                function, args, kwargs, preserve_rng_state, lambda: recompute_context, early_stop
            )
    return _replayed_in_backward(function, args, kwargs, preserve_rng_state, contextlib.nullcontext, early_stop)


def _autocast_regions() -> list:
    """The autocast regions open now, to reopen around the replay (backward runs with autocast off)."""
    return [
        amp.autocast(kind, dtype=amp.get_autocast_dtype(kind))
        for kind in amp.DEVICE_TYPES
        if amp.is_autocast_enabled(kind)
    ]


def _replayed_in_backward(
    function, args: tuple, kwargs: dict, preserve_rng_state: bool, recompute_context, early_stop: bool | None
):
    """``function(*args, **kwargs)``, run again for its side effects when backward reaches its outputs.

    One replay per backward pass: with several outputs, the first whose gradient arrives replays,
    the others of the same pass do not (an output seen twice starts a new pass). With ``early_stop``
    the replay stops inside the op that saves the segment's last tensor (none: no replay); None is the
    reentrant form."""
    tensor = _tensor_class()
    rng_state = random.default_generator.get_state()
    regions = _autocast_regions()
    # the reentrant replay runs on detached inputs with recording off; the non-reentrant one on the
    # inputs themselves with recording on (PyTorch's: an in-place write to an input in the segment
    # then bumps its version, and backward's version check raises as PyTorch's does)
    saved_args = tuple(a.detach() if isinstance(a, tensor) and early_stop is None else a for a in args)
    recorded: list[bool] = []  # per op the forward recorded: whether PyTorch saves a tensor for it
    outer = autograd._mode.watch

    def count(name, operands) -> None:
        recorded.append(_saves(name, operands))
        if outer is not None:
            outer(name, operands)

    autograd._mode.watch = count
    try:
        out = function(*args, **kwargs)
    finally:
        autograd._mode.watch = outer
    # the op count the replay stops at (0: no replay); None: the whole segment
    stop_after = max((i + 1 for i, saves in enumerate(recorded) if saves), default=0) if early_stop else None
    outputs = [
        o for o in (out if isinstance(out, tuple | list) else (out,)) if isinstance(o, tensor) and o.requires_grad
    ]
    seen: set[int] = set()

    def replay(index: int) -> None:
        if (not seen or index in seen) and stop_after != 0:
            seen.clear()
            if preserve_rng_state:
                current = random.default_generator.get_state()
                random.default_generator.set_state(rng_state)
            replayed = [0]

            def stop_at_last_saved(name, operands) -> None:
                replayed[0] += 1
                if replayed[0] == stop_after:
                    raise _StopRecompute

            watch = autograd._mode.watch
            try:
                with contextlib.ExitStack() as stack:
                    for region in regions:
                        stack.enter_context(region)
                    stack.enter_context(recompute_context())
                    # the non-reentrant replay records, as PyTorch's (its results and graph are dropped)
                    stack.enter_context(no_grad() if early_stop is None else enable_grad())
                    autograd._mode.watch = stop_at_last_saved if stop_after is not None else None
                    function(*saved_args, **kwargs)
            except _StopRecompute:
                pass
            finally:
                autograd._mode.watch = watch
                if preserve_rng_state:  # PyTorch forks the random state for the replay; without it, it draws
                    random.default_generator.set_state(current)
        seen.add(index)

    for index, o in enumerate(outputs):
        o.register_hook(lambda grad, index=index: replay(index))
    return out


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
