"""The handle that `Module.register_forward_hook`, `register_forward_pre_hook` and `Tensor.register_hook` return."""

from __future__ import annotations


class RemovableHandle:
    """What ``register_forward_hook`` returns: ``handle.remove()`` takes the hook out again."""

    _next_id = 0

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()
