"""The kernel IR: types, values, the DSL builder, the text form, the verifier, the interpreter."""

from . import types
from .builder import KernelBuilder
from .core import Block, BufferDecl, If, Instr, Kernel, Loop, ParamDecl, SharedDecl, Value

__all__ = [
    "types",
    "KernelBuilder",
    "Kernel",
    "Block",
    "If",
    "Instr",
    "Loop",
    "Value",
    "BufferDecl",
    "ParamDecl",
    "SharedDecl",
    "parse",
    "verify",
]


def parse(text: str) -> Kernel:
    """Read a kernel from its canonical text form (inverse of ``str(kernel)``)."""
    from .text import parse_kernel

    return parse_kernel(text)


def verify(kernel: Kernel) -> Kernel:
    """Check types, dominance, access modes and barrier uniformity; raise IRError naming the instruction."""
    from .verify import verify_kernel

    return verify_kernel(kernel)
