"""The public surface, made in one place: ``vkml.<name>``, ``__all__``, the ``Tensor`` methods and their
in-place forms, from the declarations of the modules that define the ops.

An op declares how a user reaches it once, where it is defined:

a face module lists ``EXPORTS``, one ``Export`` per public name (``Export("floor", method=True,
inplace=True)``: ``vkml.floor``, ``Tensor.floor`` and ``Tensor.floor_``; vkml/frontend/exports.py).

``install`` walks ``MODULES`` in order and binds everything; vkml/__init__.py calls it as its last
statement, and it ends by letting autocast (vkml/frontend/amp.py) wrap what is public, so nothing
bound by the installer escapes the wrapping.
"""

from __future__ import annotations

import importlib

from . import mutation
from .exports import Export

# The face modules that export ops, in the order they are installed: a later module's method replaces
# an earlier one's of the same name unless its Export says ``replace=False``.
MODULES = (
    "operators",
    "creation",
    "indexing",
    "random",
    "pointwise",
    "shape",
    "construction",
    "tensor_api",
    "statistics",
    "scans",
    "selection",
    "index_ops",
    "sorting",
    "searching",
    "counting",
    "combining",
    "transcendental",
)


def inplace_method(name: str, fn):
    """``Tensor.<name>``: ``fn(self, *args, **kwargs)`` computed and written into ``self``, which is returned."""

    def method(self, *args, _fn=fn, _name=name, **kwargs):
        return mutation.inplace(self, _name, lambda t, *a: _fn(t, *a, **kwargs), *args)

    method.__name__ = name
    method.__doc__ = f"In-place ``{name[:-1]}``: the result written into this tensor, which is returned."
    return method


def exports() -> list[tuple[Export, object]]:
    """Every (Export, what vkml.<name> is) in install order."""
    out = []
    for module_name in MODULES:
        module = importlib.import_module(f"{__package__}.{module_name}")
        for export in module.EXPORTS:
            out.append((export, getattr(module, export.name, None) if export.value is None else export.value))
    return out


def install(namespace: dict, tensor_class) -> list[str]:
    """Bind every export into ``namespace`` (vkml's globals) and ``tensor_class``; returns the names for ``__all__``."""
    public = []
    for export, fn in exports():
        if export.function:
            namespace[export.name] = fn
            if export.name not in public:
                public.append(export.name)
        method = fn if export.method is True else export.method
        if method is not False and (export.replace or export.name not in vars(tensor_class)):
            setattr(tensor_class, export.name, method)
        if export.inplace and (export.replace or export.name + "_" not in vars(tensor_class)):
            setattr(tensor_class, export.name + "_", inplace_method(export.name + "_", method or fn))
    return public
