"""What the page of a public op outside the registry says beyond its docstring (``OpDoc``).

A registered op carries its precision, NaN and divergence text in its ``OpDef``. The ops the face
builds from other ops (softmax, conv2d, sort, gather, the layers and losses, movement and creation)
have their implementation in the face, which this layer may not import; their page text is defined
here once, next to the registry, and names the face's functions by ``Ref`` (a dotted path that
tools/gen_op_docs.py resolves when it renders the page). ``Sig`` asks the renderer for a function's
own signature, so a page never repeats a parameter list by hand where the function has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class Ref:
    """A dotted name in vkml (``vkml.frontend.operators.mean``), looked up only when a page is rendered.

    An attribute of a Ref is the Ref one level down, so ``Ref("vkml").frontend.statistics.var`` reads
    as the face's code does.
    """

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        object.__setattr__(self, "path", path)

    def __getattr__(self, name: str) -> Ref:
        if name.startswith("__"):
            raise AttributeError(name)
        return Ref(f"{self.path}.{name}")

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError("a Ref is immutable")

    def __eq__(self, other) -> bool:
        return isinstance(other, Ref) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    def __repr__(self) -> str:
        return f"Ref({self.path!r})"


class Sig(NamedTuple):
    """A call written as ``prefix`` and the signature of ``target`` (for a method: without its tensor)."""

    prefix: str
    target: Ref
    method: bool = False
    suffix: str = ""  # words after the signature


class Listed(NamedTuple):
    """A call listed only while ``present`` exists (and, with ``same``, is that function, autocast unwrapped)."""

    call: object
    present: Ref
    same: Ref | None = None


@dataclass(frozen=True)
class OpDoc:
    """A public op outside the registry: its kind, how it is called, and its page's notes."""

    kind: str
    calls: tuple[object, ...]  # str, Sig or Listed
    target: object  # the Ref (or function) whose docstring opens the page
    precision: str = "exact (moves or copies values; never changes bits)"
    special: str = ""
    divergence: str = ""
    gradient: str = ""  # a key of vkml.ops.grads.RULES, or what to say instead
    backends: str = "cpu, vulkan"  # where it computes (the host factorizations: "host (numpy float64) ...")


def sig(prefix: str, target: Ref) -> Sig:
    return Sig(prefix, target)


def method(name: str, target: Ref) -> Sig:
    return Sig(f"Tensor.{name}", target, method=True)


LEAF = "A leaf: with `requires_grad=True`, `backward()` adds to its `.grad`."
THROUGH = "Through the ops it is built of, each with its own rule (see their pages)."
vkml = Ref("vkml")
functions = vkml.frontend.operators
nnf = vkml.nn.functional
