"""The handle that `Module.register_forward_hook`, `register_forward_pre_hook` and `Tensor.register_hook` return."""

from __future__ import annotations


class RemovableHandle:
    """What ``register_forward_hook`` returns: ``handle.remove()`` takes the hook out again.

    ``extra``: the tables that also hold the hook's id (a module's ``_forward_hooks_with_kwargs``), which
    ``remove()`` clears too, as PyTorch's ``extra_dict``.

    >>> hooks = {}
    >>> handle = RemovableHandle(hooks)
    >>> hooks[handle.id] = print
    >>> handle.remove()
    >>> handle.hooks_dict_ref()
    {}
    """

    _next_id = 0

    def __init__(self, hooks: dict, *, extra: tuple = ()):
        self._hooks = hooks
        self._extra = extra
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def hooks_dict_ref(self) -> dict:
        """The table the hook is in (PyTorch's handle holds a weak reference and calls it)."""
        return self._hooks

    def remove(self) -> None:
        self._hooks.pop(self.id, None)
        for table in self._extra:
            if isinstance(table, set):
                table.discard(self.id)
            else:
                table.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()
