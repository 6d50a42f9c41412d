"""Kernel parameters that change on every run, read from a small ring of buffers instead of push constants.

Push constants are recorded into a command buffer, buffer contents are not: a run whose only
change from the last is a parameter's value (a random key, an optimizer's bias correction, a
dataset's slice offset) records its command buffer anew unless the parameter comes from memory.
``scalars_variant`` makes the kernel that loads such parameters from the buffer ``SCALARS``;
``ScalarRing`` holds ``RING`` entries of those words, each split into one aligned window per
dispatch. The host writes an entry before the run that reads it, once the run that read it last
is complete, so it fills one entry while the device may still read the other. The words hold the
bits the push constants would have held (``runtime.base.PARAM_CODES``, the push-constant packer's
struct codes), so results do not change.

Two users: vkml.jit's replays (vkml/frontend/jit.py) and eager realizes of a cached plan
(vkml/schedule/eager_scalars.py).

    >>> ring = ScalarRing(device, [2, 1])          # doctest: +SKIP
    >>> ring.words[:] = [bits_a, bits_b, 0, 0, bits_c]   # doctest: +SKIP
    >>> entry = ring.write()                       # doctest: +SKIP
    >>> # ... the dispatches bind ring.windows[entry]; once submitted:
    >>> ring.read_by(entry, device.last_submission)     # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import weakref

import numpy as np

from ..ir import core as ir
from ..ir import types as T
from ..ir.lazy_kernel import LazyKernel
from ..ir.text import INDENT

SCALARS = "jit_scalars"  # the buffer a kernel variant reads its scalars from (vkml.jit named it first)
RING = 2  # entries of a ring
WORD_DTYPES = (T.float32, T.int32, T.uint32)  # parameters of one 32-bit word: the ones that can move
_VARIANTS: dict = {}  # (id(kernel), names) -> (weak reference to the kernel, variant)


def scalars_variant(kernel: ir.Kernel, names: tuple) -> ir.Kernel:
    """``kernel`` reading parameters ``names`` from buffer ``SCALARS`` (word i: names[i]'s bits).

    The body is the same: each moved parameter's SSA value is now defined by a load (and a bitcast)
    at the start instead of by the push constant. One variant per kernel and names, shared by
    every dispatch and recording (each binds its own window of the buffer).

    The variant is a ``LazyKernel`` whose text is the kernel's own with those loads written ahead of
    its body under the parameters' names (``_variant_text``): a kernel the disk gave as text (a warm
    process's) is not parsed to make it, and with the variant's SPIR-V on disk too, not at all."""
    found = _VARIANTS.get((id(kernel), names))
    if found is not None and found[0]() is kernel:
        return found[1]
    buffers = (*kernel.buffers, ir.BufferDecl(SCALARS, T.uint32, "read"))
    param_types = tuple(p for p in kernel.param_types() if p[0] not in names)
    parsed = None
    if not (isinstance(kernel, LazyKernel) and kernel._parsed is None):  # its body is at hand: built from it
        parsed = _variant_of_parsed(kernel.parsed() if isinstance(kernel, LazyKernel) else kernel, names)
    text = _variant_text(str(kernel), dict(kernel.param_types()), names)
    variant = LazyKernel(text, kernel.name, tuple(kernel.local_size), buffers, param_types, parsed)
    _VARIANTS[(id(kernel), names)] = (weakref.ref(kernel), variant)
    return variant


def _variant_of_parsed(kernel: ir.Kernel, names: tuple) -> ir.Kernel:
    """``scalars_variant``'s kernel built from ``kernel``'s body: the loads, then the body as it is."""
    decls = {p.name: p for p in kernel.params}
    prefix = []
    for w, name in enumerate(names):
        p = decls[name]
        index = ir.Value(T.uint32)
        prefix.append(ir.Instr("const", (), index, (np.uint32(w),)))
        if p.dtype is T.uint32:
            prefix.append(ir.Instr("load", (index,), p.value, (SCALARS,)))
        else:
            raw = ir.Value(T.uint32)
            prefix.append(ir.Instr("load", (index,), raw, (SCALARS,)))
            prefix.append(ir.Instr("bitcast", (raw,), p.value, (p.dtype.name,)))
    return dataclasses.replace(
        kernel,
        buffers=(*kernel.buffers, ir.BufferDecl(SCALARS, T.uint32, "read")),
        params=tuple(p for p in kernel.params if p.name not in names),
        body=ir.Block([*prefix, *kernel.body.body], kernel.body.yields),
    )


def _variant_text(text: str, dtypes: dict, names: tuple) -> str:
    """The IR text of ``scalars_variant``'s kernel, edited from ``text`` (the kernel's, ``print_kernel``'s
    form): the ``SCALARS`` buffer after the others, the moved parameters' declarations gone, and ahead of
    the body each one defined under its own name by a load of its word (and a bitcast to its dtype), with
    values named ``%jit_w<i>``, ``%jit_r<i>`` (the printer names values by number, parameters by name)."""
    lines = text.split("\n")
    moved = {f"{INDENT}param %{name}: {T.by_name(dtypes[name]).short}" for name in names}
    head = 1  # the kernel's line, then its declarations
    while head < len(lines) and lines[head].startswith(_DECLARATIONS):
        head += 1
    buffers = 1
    while lines[buffers].startswith(_BUFFER):
        buffers += 1
    prefix = []
    for w, name in enumerate(names):
        prefix.append(f"{INDENT}%jit_w{w} = const {w} : u32")
        if dtypes[name] == "uint32":
            prefix.append(f"{INDENT}%{name} = load {SCALARS}[%jit_w{w}] : u32")
        else:
            prefix.append(f"{INDENT}%jit_r{w} = load {SCALARS}[%jit_w{w}] : u32")
            prefix.append(f"{INDENT}%{name} = bitcast %jit_r{w} : {T.by_name(dtypes[name]).short}")
    body = head + 1 if head < len(lines) and lines[head] == "" else head
    declarations = [line for line in lines[buffers:head] if line not in moved]
    return "\n".join(
        [*lines[:buffers], f"{INDENT}buffer {SCALARS}: u32 read", *declarations, "", *prefix, *lines[body:]]
    )


_BUFFER = f"{INDENT}buffer "
_DECLARATIONS = (_BUFFER, f"{INDENT}param ", f"{INDENT}shared ")


class ScalarRing:
    """``RING`` uint32 buffers on ``device``, each cut into one window per entry of ``counts``
    (that many words, at ``starts``, aligned for binding).

    ``words`` is what the next ``write`` puts into an entry; ``windows[entry]`` are the buffers the
    dispatches bind as ``SCALARS``; ``serials[entry]`` the last submission that read it (``read_by``).
    The caller serialises ``write`` and ``read_by`` (vkml.jit and the scheduler run under the
    device's lock)."""

    __slots__ = ("device", "starts", "buffers", "windows", "serials", "next", "words", "latest", "written")

    def __init__(self, device, counts: list[int]):
        align = device.alias_alignment(T.uint32)
        self.starts, start = [], 0
        for count in counts:
            self.starts.append(start)
            start += -(-count // align) * align
        self.device = device
        # Memory for the host to write: a range freed while submitted work may still use it is first
        # written by a copy queued behind that work, and every later write waits for that copy.
        self.buffers = [device.upload_new(T.uint32, np.zeros(start, np.uint32)) for _ in range(RING)]
        self.windows = [[device.alias(b, at, n) for at, n in zip(self.starts, counts)] for b in self.buffers]
        self.serials = [b.ready_serial for b in self.buffers]
        self.next = 0
        self.words = np.zeros(start, np.uint32)
        # ``put``'s: the entry it wrote last and its bytes (a ring is written one of the two ways)
        self.latest, self.written = 0, None

    def write(self) -> int:
        """Put ``words`` into the next entry, once the submission that read it last is complete
        (``VulkanDevice.write_after``: through the mapping); returns the entry."""
        entry = self.next
        self.next = (entry + 1) % RING
        self.device.write_after(self.buffers[entry], self.words, self.serials[entry])
        return entry

    def put(self, data: bytes) -> int:
        """The entry holding the words ``data`` (as many bytes as ``words``): the last one written if it
        holds them already (a run that repeats its scalars submits the same recording), else the next,
        written as ``write`` does."""
        if data == self.written:
            return self.latest
        entry = self.latest = self.next
        self.next = (entry + 1) % RING
        self.written = data
        self.device.write_after(self.buffers[entry], np.frombuffer(data, np.uint32), self.serials[entry])
        return entry

    def read_by(self, entry: int, serial: int) -> None:
        """Submission ``serial`` reads ``entry``: its next ``write`` waits for it."""
        self.serials[entry] = serial
