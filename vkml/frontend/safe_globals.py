"""The globals a user allows a weights-only load to run (``torch.serialization.add_safe_globals``).

``vkml.load(weights_only=True)`` (the default, as PyTorch's) unpickles tensors, dtypes, numbers,
strings and containers only; a file that names any other global (a user's dataclass or enum kept in
a checkpoint, ``argparse.Namespace``) raises ``pickle.UnpicklingError``. PyTorch's way out without
``weights_only=False`` is to allow those globals by name, and so is vkml's: both the reader of
vkml's own pickles and the reader of ``torch.save`` archives consult this list.

>>> import argparse, vkml
>>> vkml.serialization.add_safe_globals([argparse.Namespace])
>>> vkml.serialization.get_safe_globals()
[<class 'argparse.Namespace'>]
>>> vkml.serialization.clear_safe_globals()
"""

from __future__ import annotations

import threading

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals"]

# "module.qualname" -> (the object, as the user gave it); a load looks globals up by that name. The lock
# makes add/clear and a load's lookups in other threads see whole entries.
_ALLOWED: dict[str, object] = {}
_LOCK = threading.Lock()


def _full_name(entry) -> tuple[str, object]:
    if isinstance(entry, tuple):
        if len(entry) != 2 or not isinstance(entry[1], str):
            raise ValueError(
                f"add_safe_globals: expected a callable or a (callable, 'module.name') pair, got {entry!r}"
            )
        return entry[1], entry
    module, name = getattr(entry, "__module__", None), getattr(entry, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(name, str):
        raise TypeError(
            f"add_safe_globals: {entry!r} has no __module__ and __qualname__ to be named by; pass (obj, 'module.name')"
        )
    return f"{module}.{name}", entry


def add_safe_globals(safe_globals: list) -> None:
    """Allow these globals in a weights-only ``vkml.load``, as ``torch.serialization.add_safe_globals``.

    Each entry is a class or function (named by its ``__module__`` and ``__qualname__``) or a pair
    ``(obj, "module.name")`` for an object pickled under another name.

    >>> import argparse, vkml
    >>> vkml.serialization.add_safe_globals([argparse.Namespace])
    >>> vkml.serialization.clear_safe_globals()
    """
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(f"add_safe_globals: expected a list of globals, got {type(safe_globals).__name__}")
    named = [_full_name(entry) for entry in safe_globals]  # every entry checked before any is added
    with _LOCK:
        _ALLOWED.update(named)


def get_safe_globals() -> list:
    """The globals allowed by :func:`add_safe_globals`, as they were given."""
    with _LOCK:
        return list(_ALLOWED.values())


def clear_safe_globals() -> None:
    """Forget every global allowed by :func:`add_safe_globals`."""
    with _LOCK:
        _ALLOWED.clear()


def lookup(module: str, name: str):
    """The object allowed under ``module.name``, or None (the unpicklers' question)."""
    with _LOCK:
        entry = _ALLOWED.get(f"{module}.{name}")
    if entry is None:
        return None
    return entry[0] if isinstance(entry, tuple) else entry


class safe_globals:
    """A context in which these globals are allowed, as ``torch.serialization.safe_globals``; the list
    is what it was before on exit.

    >>> import argparse, vkml
    >>> with vkml.serialization.safe_globals([argparse.Namespace]):
    ...     pass
    """

    def __init__(self, safe_globals: list):
        self.safe_globals = safe_globals

    def __enter__(self):
        with _LOCK:
            self._before = dict(_ALLOWED)
        add_safe_globals(self.safe_globals)
        return self

    def __exit__(self, *exc):
        with _LOCK:
            _ALLOWED.clear()
            _ALLOWED.update(self._before)
        return False
