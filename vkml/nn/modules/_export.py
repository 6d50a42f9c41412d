"""Fills a ``torch.nn.modules.<file>`` namespace with the vkml classes PyTorch defines in that file."""

from __future__ import annotations

import importlib


def export(namespace: dict, names: list[str], private: dict[str, str] | None = None) -> None:
    """Bind each of ``names`` that vkml.nn has (a name vkml lacks stays absent: AttributeError, as for any
    missing layer) and each private base from its vkml module (``{name: "vkml.nn.<module>"}``).

    Each class bound under its own name says it lives here (``__module__``): ``type(nn.Linear(2, 2))``
    prints ``<class 'vkml.nn.modules.linear.Linear'>`` where PyTorch prints
    ``<class 'torch.nn.modules.linear.Linear'>`` (docs/nn.md, "Class paths"), and pickle finds it here."""
    nn = importlib.import_module("vkml.nn")  # lazy: names given at run time (vkml.nn is importing this)
    namespace.update({name: getattr(nn, name) for name in names if hasattr(nn, name)})
    for name, where in (private or {}).items():
        namespace[name] = getattr(importlib.import_module(where), name)  # lazy: names given at run time
    for name in (*names, *(private or {})):
        cls = namespace.get(name)
        if isinstance(cls, type) and cls.__qualname__ == name and cls.__module__.startswith("vkml.nn."):
            cls.__module__ = namespace["__name__"]
