"""A kernel known by its text form, its body read from that text only when something asks for it.

The disk level of the template cache (vkml/schedule/template_disk.py) gives a warm process its
lowered kernels as text. Running one on Vulkan needs only its name, workgroup size, buffers,
parameter names and dtypes, and its text (the kernel cache's key, whose SPIR-V is on disk too),
so those are given and the rest (the body, the parameters' values, shared arrays, subgroup size)
is parsed from the text at the first read: when the SPIR-V entry was lost and the kernel is
compiled, or when the CPU interprets it. ``str(kernel)`` is the text, printed by nobody.

    >>> k = LazyKernel(text, "E_add_4", (64, 1, 1), buffers, (("s0", "float32"),))   # doctest: +SKIP
    >>> str(k) is text, k.body                       # the body: parsed now       # doctest: +SKIP
"""

from __future__ import annotations

import threading

from ..errors import IRError
from .core import BufferDecl, Kernel
from .text import parse_kernel


class LazyKernel(Kernel):
    """A ``Kernel`` whose ``body``, ``params``, ``shared`` and ``subgroup_size`` come from ``text`` when first read.

    ``parsed``: the kernel itself where the caller has it (a kernel just lowered): nothing is parsed then.
    The parsed kernel must have the given name, workgroup size, buffers and parameters, else
    reading its body raises IRError (the text and the description came from one entry).
    """

    def __new__(cls, *args, **fields):
        # ``dataclasses.replace(kernel, ...)`` calls the class with every field of a Kernel (vkml.jit's
        # variants do): what it makes is a plain Kernel, the text of the one replaced no longer its own.
        if "body" in fields:
            return Kernel(**fields)
        return super().__new__(cls)

    def __init__(
        self,
        text: str,
        name: str,
        local_size: tuple[int, int, int],
        buffers: tuple[BufferDecl, ...],
        param_types: tuple[tuple[str, str], ...],
        parsed: Kernel | None = None,
    ):
        self.name = name
        self.local_size = local_size
        self.buffers = buffers
        self._text = text
        self._param_types = param_types
        self._parsed = parsed
        self._lock = threading.Lock()

    @classmethod
    def of(cls, kernel: Kernel, text: str) -> LazyKernel:
        """``kernel`` (whose text form is ``text``) as a LazyKernel: the same kernel, its text kept."""
        return cls(text, kernel.name, tuple(kernel.local_size), kernel.buffers, kernel.param_types(), kernel)

    def __str__(self) -> str:
        return self._text

    def param_types(self) -> tuple[tuple[str, str], ...]:
        return self._param_types

    def parsed(self) -> Kernel:
        """The kernel the text describes (parsed once, on first use)."""
        found = self._parsed
        if found is None:
            with self._lock:
                found = self._parsed
                if found is None:
                    found = parse_kernel(self._text)
                    given = (self.name, tuple(self.local_size), tuple(self.buffers), tuple(self._param_types))
                    if (found.name, tuple(found.local_size), tuple(found.buffers), found.param_types()) != given:
                        raise IRError(f"kernel {self.name!r}: its text describes another kernel than its entry says")
                    self._parsed = found
        return found

    @property
    def params(self):
        return self.parsed().params

    @property
    def shared(self):
        return self.parsed().shared

    @property
    def body(self):
        return self.parsed().body

    @property
    def subgroup_size(self):
        return self.parsed().subgroup_size
