"""The kernel IR: types, values, the DSL builder, the text form, the verifier, the interpreter."""

from . import types
from .builder import KernelBuilder
from .core import Block, BufferDecl, If, Instr, Kernel, Loop, ParamDecl, SharedDecl, Value
from .text import parse_kernel as parse
from .verify import verify_kernel

# Bound after the submodule import above, which would otherwise leave `vkml.ir.verify` as the module.
verify = verify_kernel

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
