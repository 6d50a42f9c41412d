"""The pages of the public ops outside the registry, by family (``PAGES``: name -> ``OpDoc``).

tools/gen_op_docs.py renders docs/ops/ from these and from ``REGISTRY``; nothing else reads them, so
``import vkml`` does not load this package.
"""

from __future__ import annotations

from . import (
    complex,
    core,
    fft,
    foreach,
    indexing,
    layers,
    layers_more,
    legacy,
    linalg,
    shape,
    sorting,
    sparse,
    spatial,
    statistics,
)
from . import special as special_functions
from .page import OpDoc

PAGES: dict[str, OpDoc] = {}
for _family in (
    core,
    shape,
    statistics,
    sorting,
    layers,
    indexing,
    spatial,
    layers_more,
    linalg,
    legacy,
    sparse,
    fft,
    foreach,
    complex,
):
    for _name, _doc in _family.PAGES.items():
        if _name in PAGES:
            raise ValueError(f"{_name!r} has two pages ({_family.__name__} and another family)")
        PAGES[_name] = _doc
for _name, _doc in special_functions.PAGES.items():  # torch.special's composed functions
    if _name in PAGES:
        raise ValueError(f"{_name!r} has two pages")
    PAGES[_name] = _doc
