"""The template cache's disk level: a warm process reads the kernels lowered for a group, not lowers them.

``scheduler._Group.template`` keys its memory cache by the group's ``Signature`` and the device's
``Tuning``. On a miss, on a device with a ``template_store`` (Vulkan: vkml/runtime/vulkan/template_store.py),
it asks the disk here first, by a stable text of that key (``structure``) and the scheduler's limits;
the store adds the device's features and a hash of every source file lowering reads (a changed vkml
never reuses an old template). A hit gives ``LazyKernel``s (vkml/ir/lazy_kernel.py): their text is the
kernel cache's key, whose SPIR-V is on disk too, so nothing is lowered, printed, assembled or
validated; the body is parsed only if something reads it. A template is read only when every one
of its kernels has its SPIR-V in the kernel cache: otherwise lowering is cheaper than parsing.

Not every key has a stable text: only vkml's own types are described (the registry's built-in
ops, dtypes, vkml's enums, named tuples and frozen dataclasses, numbers, strings). A group with
anything else (a custom op of ``vkml.dsl``, whose body can change with no vkml source changing; a
baked view) is kept in memory only. What is read is checked as untrusted input on top of the
store's MAC: every field's type and every position against the group's signature; any failure is
a miss, and the entry is removed.
"""

from __future__ import annotations

import dataclasses
import enum

from ..graph.node import Op
from ..ir import types as T
from ..ir.core import ACCESS_MODES, BufferDecl
from ..ir.lazy_kernel import LazyKernel
from ..kernels.lowering import BufferKind, BufferRole, GroupTemplate, KernelTemplate, ViewRole
from ..ops import BUILTIN
from ..ops.registry import OpDef


class _Unstable(Exception):
    """The key holds something with no text that is the same in every process."""


def _describe(value, out: list) -> None:
    kind = type(value)
    if value is None or kind is bool or kind is int:
        out.append(repr(value))
    elif kind is str:
        out.append(repr(value))
    elif kind is float:
        out.append(value.hex())
    elif kind is tuple or kind is list:
        out.append("(")
        for item in value:
            _describe(item, out)
            out.append(",")
        out.append(")")
    elif kind is Op:
        out.append("Op." + str.__str__(value))
    elif kind is T.DType:
        out.append("T." + value.name)
    elif kind is OpDef:
        if value not in BUILTIN:
            raise _Unstable(value.name)
        out.append("OpDef." + value.name)
    elif not kind.__module__.startswith("vkml."):
        raise _Unstable(kind.__qualname__)
    elif isinstance(value, enum.Enum):
        out.append(f"{kind.__module__}.{kind.__qualname__}.{value.name}")
    elif isinstance(value, tuple) and hasattr(kind, "_fields"):  # a named tuple
        out.append(f"{kind.__module__}.{kind.__qualname__}")
        _describe(tuple(value), out)
    elif dataclasses.is_dataclass(value) and kind.__dataclass_params__.frozen:
        out.append(f"{kind.__module__}.{kind.__qualname__}")
        _describe(tuple(getattr(value, f.name) for f in dataclasses.fields(value)), out)
    else:
        raise _Unstable(kind.__qualname__)


def structure(key: tuple, limits: tuple) -> str | None:
    """The text of template key ``key`` (the scheduler's), the same in every process; None where it has none."""
    out: list[str] = []
    try:
        _describe((key, limits), out)
    except _Unstable:
        return None
    return "".join(out)


# ---------------------------------------------------------------- a template and back


def _role(role) -> list:
    if type(role) is not BufferRole or type(role.kind) is not BufferKind or type(role.what) is not int:
        raise _Unstable("buffer role")
    return [role.kind.value, role.what]


def _param(role) -> int | list:
    if type(role) is int:
        return role
    if type(role) is ViewRole and all(type(x) is int for x in role):
        return list(role)
    raise _Unstable("parameter role")


def encode(template: GroupTemplate) -> tuple[dict | None, GroupTemplate]:
    """``template`` as JSON, or None where a part has no JSON form; and the template with each kernel a
    ``LazyKernel`` of itself (its text printed once, here, for both the entry and the kernel cache)."""
    kept, kernels = [], []
    for kt in template.kernels:
        kernel = kt.kernel
        text = str(kernel)
        lazy = kernel if isinstance(kernel, LazyKernel) else LazyKernel.of(kernel, text)
        kept.append(KernelTemplate(lazy, kt.grid, kt.buffers, kt.params))
        kernels.append((kernel, text, kt))
    lazy_template = GroupTemplate(kept, template.temps)
    try:
        value = {
            "temps": [[dtype.name, _int(count)] for dtype, count in template.temps],
            "kernels": [
                {
                    "ir": text,
                    "name": kernel.name,
                    "local_size": [_int(x) for x in kernel.local_size],
                    "buffers": [[b.name, b.dtype.name, b.access] for b in kernel.buffers],
                    "params": [list(p) for p in kernel.param_types()],
                    "grid": [_int(x) for x in kt.grid],
                    "roles": [[name, *_role(role)] for name, role in kt.buffers.items()],
                    "param_roles": [[name, _param(role)] for name, role in kt.params.items()],
                }
                for kernel, text, kt in kernels
            ],
        }
    except _Unstable:
        return None, lazy_template
    return value, lazy_template


def _int(x) -> int:
    if type(x) is not int:
        raise _Unstable("not an int")
    return x


class _Bad(Exception):
    """A stored template that does not fit (damaged, or describes another group)."""


def _check(condition: bool) -> None:
    if not condition:
        raise _Bad


def _position(value, bound: int) -> int:
    _check(type(value) is int and 0 <= value < bound)
    return value


def decode(value, sig, output_count: int) -> GroupTemplate | None:
    """The template ``value`` (from ``encode``) describes, for the group of signature ``sig`` with
    ``output_count`` outputs; None if any part is malformed or out of range."""
    try:
        _check(type(value) is dict and type(value.get("kernels")) is list and type(value.get("temps")) is list)
        temps = []
        for item in value["temps"]:
            _check(type(item) is list and len(item) == 2 and type(item[0]) is str)
            temps.append((T.by_name(item[0]), _position(item[1], 1 << 62)))
        bounds = {BufferKind.LEAF: len(sig.leaves), BufferKind.OUT: output_count, BufferKind.TEMP: len(temps)}
        kernels = []
        for item in value["kernels"]:
            kernels.append(_kernel(item, bounds, len(sig.consts), len(sig.views)))
        _check(bool(kernels))
        return GroupTemplate(kernels, temps)
    except (_Bad, TypeError, ValueError, KeyError):
        return None


def _kernel(item, bounds: dict, const_count: int, view_count: int) -> KernelTemplate:
    _check(type(item) is dict)
    text, name = item["ir"], item["name"]
    _check(type(text) is str and type(name) is str)
    local_size = tuple(_position(x, 1 << 16) for x in item["local_size"])
    grid = tuple(_position(x, 1 << 32) for x in item["grid"])
    _check(len(local_size) == 3 and len(grid) == 3)
    buffers = []
    for entry in item["buffers"]:
        _check(type(entry) is list and len(entry) == 3 and all(type(x) is str for x in entry))
        _check(entry[2] in ACCESS_MODES)
        buffers.append(BufferDecl(entry[0], T.by_name(entry[1]), entry[2]))
    params = []
    for entry in item["params"]:
        _check(type(entry) is list and len(entry) == 2 and all(type(x) is str for x in entry))
        params.append((entry[0], T.by_name(entry[1]).name))
    roles = {}
    for entry in item["roles"]:
        _check(type(entry) is list and len(entry) == 3 and type(entry[0]) is str)
        kind = BufferKind(entry[1])
        roles[entry[0]] = BufferRole(kind, _position(entry[2], bounds[kind]))
    param_roles = {}
    for entry in item["param_roles"]:
        _check(type(entry) is list and len(entry) == 2 and type(entry[0]) is str)
        role = entry[1]
        if type(role) is list:
            _check(len(role) == 5 and all(type(x) is int for x in role))
            param_roles[entry[0]] = ViewRole(_position(role[0], view_count), *role[1:])
        else:
            param_roles[entry[0]] = _position(role, const_count)
    # Every buffer bound, every parameter given: a kernel the recipe can bind whole.
    _check(list(roles) == [b.name for b in buffers] and sorted(param_roles) == sorted(n for n, _ in params))
    kernel = LazyKernel(text, name, local_size, tuple(buffers), tuple(params))
    return KernelTemplate(kernel, grid, roles, param_roles)


# ---------------------------------------------------------------- the scheduler's two calls


def load(device, key: tuple, limits: tuple, sig, output_count: int) -> GroupTemplate | None:
    """The template stored for this group on ``device``, or None (no store, no stable key, a miss)."""
    store = getattr(device, "template_store", None)
    text = None if store is None else structure(key, limits)
    if text is None:
        return None
    file_key = store.key(text)
    value = store.load(file_key)
    if value is None:
        return None
    found = decode(value, sig, output_count)
    if found is None:
        store.reject(file_key)
        return None
    if not all(store.has_binary(str(kt.kernel)) for kt in found.kernels):
        return None  # lowering again costs less than parsing a kernel to compile it
    return found


def save(device, key: tuple, limits: tuple, template: GroupTemplate) -> GroupTemplate:
    """Store ``template`` for this group on ``device`` where it can be; return it with ``LazyKernel``s."""
    store = getattr(device, "template_store", None)
    text = None if store is None else structure(key, limits)
    if text is None:
        return template
    value, template = encode(template)
    if value is not None:
        store.save(store.key(text), value)
    return template
