"""vkml's exceptions. A leaf module: every layer may import it."""


class DeviceError(RuntimeError):
    """Operands live on different devices, or a device cannot do what was asked."""


class ShapeError(ValueError, RuntimeError):
    """Shapes that an op cannot accept (broadcasting, reshape, matmul, ...).

    Also a RuntimeError, the type PyTorch raises for these, so code that catches PyTorch's
    error catches vkml's.
    """


class DTypeError(TypeError, RuntimeError):
    """A dtype an op cannot accept, or a type mismatch inside a kernel.

    Also a RuntimeError: PyTorch raises RuntimeError for a dtype its op refuses (``mean`` of an
    int tensor, ``where`` with a float condition, ``-`` of a bool tensor), so ``except RuntimeError``
    written for PyTorch catches it."""


class DTypeNotImplementedError(DTypeError, NotImplementedError):
    """A dtype PyTorch has no kernel of the op for (``abs`` of a bool tensor): PyTorch's
    NotImplementedError ("... not implemented for 'Bool'"), and vkml's DTypeError."""


class CompileError(RuntimeError):
    """A kernel failed to verify, assemble or validate. Carries what is needed to see why."""

    def __init__(self, message: str, ir: str = "", assembly: str = "", validator: str = ""):
        super().__init__(message)
        self.ir = ir
        self.assembly = assembly
        self.validator = validator


class OutOfMemoryError(MemoryError):
    """A device allocation failed."""


class IRError(ValueError):
    """A kernel that breaks the IR's rules (found by the verifier or the builder)."""
