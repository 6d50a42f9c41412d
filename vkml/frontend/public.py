"""The public surface, made in one place: ``vkml.<name>``, ``__all__``, the ``Tensor`` methods and their
in-place forms, from the declarations of the modules that define the ops.

An op declares how a user reaches it once, where it is defined:

- a face module lists ``EXPORTS``, one ``Export`` per public name (``Export("floor", method=True,
  inplace=True)``: ``vkml.floor``, ``Tensor.floor`` and ``Tensor.floor_``; vkml/frontend/exports.py);
- a registered op whose public function is the plain one (``vkml.sin(input)`` records the op ``sin``)
  says so in its ``OpDef`` (``public=Public(aliases=("arcsin",))``, vkml/ops/registry.py), and
  ``function`` makes that function (vkml/frontend/operators.py, which binds it as ``F.<name>`` for the
  face's own calls): adding such an op takes its definition alone.

``install`` walks ``MODULES`` in order, then the registry, and binds everything. vkml/__init__.py
calls it in its last block, right before autocast (vkml/frontend/amp.py) wraps what is public, so
every op bound here is wrapped.
"""

from __future__ import annotations

import importlib

from ..ops.registry import REGISTRY
from . import mutation
from . import operators as F
from .exports import Export

# The face modules that export ops, in the order they are installed. A method replaces one of the
# same name in Tensor's class body (shape's ``flatten`` the argument-free one); two declarations of
# one name are an error of the declarations (tests/test_public.py).
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
    "torch_names",
    "dense_linalg",
    "linalg_ops",
    "legacy_names",
    "sparse_coo",
    "memory_format",
    "windows",
    "complex",
    "stft",
    "poisson",
    "runtime_names",
    "storage_set",
    "foreach",
    "special_functions",
    "diagonal_fill",
    "peer_names",
    "pickling",
)


def inplace_method(name: str, fn):
    """``Tensor.<name>``: ``fn(self, *args, **kwargs)`` computed and written into ``self``, which is returned."""

    def method(self, *args, _fn=fn, _name=name, **kwargs):
        return mutation.inplace(self, _name, lambda t, *a: _fn(t, *a, **kwargs), *args)

    method.__name__ = name
    method.__doc__ = f"In-place ``{name[:-1]}``: the result written into this tensor, which is returned."
    return method


# The public function of a registered op that declares ``public``: made once by the module that holds the
# recording functions (F.exp is vkml.exp; aliases and ``vkml.special`` share it). An op whose PyTorch
# signature refuses a Python number somewhere (``Public.numbers``) has a public function that refuses it
# there, and F.<name> takes one anywhere for the face's own calls.
function = F.public_function


def registry_exports() -> list[tuple[Export, object]]:
    """The (Export, function) of every registered op that declares its public names."""
    out = []
    for op in REGISTRY.values():
        if op.public is not None:
            for name in (op.name, *op.public.aliases):
                out.append((Export(name, method=op.public.method, inplace=op.public.inplace), function(op.name)))
    return out


def exports() -> list[tuple[Export, object]]:
    """Every (Export, what vkml.<name> is) in install order: the face modules', then the registry's."""
    out = []
    for module_name in MODULES:
        module = importlib.import_module(f"{__package__}.{module_name}")  # lazy: names given at run time (MODULES)
        for export in module.EXPORTS:
            out.append((export, getattr(module, export.name, None) if export.value is None else export.value))
    return out + registry_exports()


def install(namespace: dict, tensor_class) -> list[str]:
    """Bind every export into ``namespace`` (vkml's globals) and ``tensor_class``; returns the names for ``__all__``."""
    public = []
    for export, fn in exports():
        if export.function:
            namespace[export.name] = fn
            if export.name not in public:
                public.append(export.name)
        method = fn if export.method is True else export.method
        if method is not False:
            setattr(tensor_class, export.name, method)
        if export.inplace:
            setattr(tensor_class, export.name + "_", inplace_method(export.name + "_", method or fn))
    return public
