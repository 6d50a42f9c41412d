"""torch.nn.modules.module's global hooks: called for every module (profilers, FLOP counters and
initialisation tracers register them), each kind before a module's own hooks of that kind.

The tables are module-level, as PyTorch's (``nn.modules.module._global_forward_hooks``); a hook's id comes
from RemovableHandle, so it never collides with a module's own hooks.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from .hooks import RemovableHandle

__all__ = [
    "register_module_backward_hook",
    "register_module_buffer_registration_hook",
    "register_module_forward_hook",
    "register_module_forward_pre_hook",
    "register_module_full_backward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_module_registration_hook",
    "register_module_parameter_registration_hook",
]

_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: set = set()
_global_forward_hooks_always_called: set = set()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
# whether the global backward hooks are full ones (PyTorch refuses to mix the two kinds); None: none yet
_global_is_full_backward_hook: bool | None = None
_global_buffer_registration_hooks: OrderedDict = OrderedDict()
_global_module_registration_hooks: OrderedDict = OrderedDict()
_global_parameter_registration_hooks: OrderedDict = OrderedDict()


def _add(table: OrderedDict, hook: Callable, extra: tuple = ()) -> RemovableHandle:
    handle = RemovableHandle(table, extra=extra)
    table[handle.id] = hook
    return handle


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(module, args)`` before every module's ``forward``; a non-None result replaces the arguments.

    >>> handle = register_module_forward_pre_hook(lambda module, args: None)
    >>> handle.remove()
    """
    return _add(_global_forward_pre_hooks, hook)


def register_module_forward_hook(
    hook: Callable, *, with_kwargs: bool = False, always_call: bool = False
) -> RemovableHandle:
    """Call ``hook(module, args, output)`` (``with_kwargs``: ``hook(module, args, kwargs, output)``) after every
    module's ``forward``; a non-None result replaces the output. ``always_call``: also when ``forward`` raises.

    >>> import vkml
    >>> calls = []
    >>> handle = register_module_forward_hook(lambda module, args, output: calls.append(type(module).__name__))
    >>> _ = vkml.nn.Linear(2, 2)(vkml.ones(1, 2))
    >>> handle.remove()
    >>> calls
    ['Linear']
    """
    handle = _add(_global_forward_hooks, hook, (_global_forward_hooks_with_kwargs, _global_forward_hooks_always_called))
    if with_kwargs:
        _global_forward_hooks_with_kwargs.add(handle.id)
    if always_call:
        _global_forward_hooks_always_called.add(handle.id)
    return handle


def _backward_kind(full: bool) -> None:
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is not None and _global_is_full_backward_hook != full:
        raise RuntimeError(
            "Cannot use both regular backward hooks and full backward hooks as a global Module hook. "
            "Please use only one of them."
        )
    _global_is_full_backward_hook = full


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(module, grad_output)`` for every module when the gradient of its output is computed; a
    non-None result replaces ``grad_output`` (Module.register_full_backward_pre_hook's rules).

    >>> handle = register_module_full_backward_pre_hook(lambda module, grad_output: None)
    >>> handle.remove()
    """
    return _add(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(module, grad_input, grad_output)`` for every module when the gradients of its inputs are
    computed; a non-None result replaces ``grad_input`` (Module.register_full_backward_hook's rules).

    >>> handle = register_module_full_backward_hook(lambda module, grad_input, grad_output: None)
    >>> handle.remove()
    """
    _backward_kind(full=True)
    return _add(_global_backward_hooks, hook)


def register_module_backward_hook(hook: Callable) -> RemovableHandle:
    """PyTorch's deprecated non-full global backward hook; vkml gives it the full hook's arguments
    (Module.register_backward_hook says why).

    >>> handle = register_module_backward_hook(lambda module, grad_input, grad_output: None)
    >>> handle.remove()
    """
    _backward_kind(full=False)
    return _add(_global_backward_hooks, hook)


def register_module_buffer_registration_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(module, name, buffer)`` whenever a module registers a buffer; a non-None result is
    registered instead.

    >>> handle = register_module_buffer_registration_hook(lambda module, name, buffer: None)
    >>> handle.remove()
    """
    return _add(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(module, name, submodule)`` whenever a module registers a child; a non-None result is
    registered instead.

    >>> handle = register_module_module_registration_hook(lambda module, name, submodule: None)
    >>> handle.remove()
    """
    return _add(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(module, name, param)`` whenever a module registers a parameter; a non-None result is
    registered instead.

    >>> handle = register_module_parameter_registration_hook(lambda module, name, param: None)
    >>> handle.remove()
    """
    return _add(_global_parameter_registration_hooks, hook)


def registered(table: OrderedDict, module, name: str, value):
    """``value`` after the registration hooks in ``table`` had their say (each may return a replacement)."""
    for hook in list(table.values()):
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value
