"""The operator registry: every op vkml implements, defined once.

An ``OpDef`` says what an op is (its kind and IR body), which dtypes it takes and returns,
and what a user needs to know (precision, NaN/inf behaviour, divergences from PyTorch).
The tensor front end, the scheduler, the backends' parity test, the docs generator and
``vkml-dump-spirv`` all read this table, and nothing lists a registered op a second time by name:
what they need to know of an op is a field here. The ops the face composes from these (softmax,
conv2d, sort, ...) have their page text in ``vkml/ops/docs/`` and their public names in their
module's ``EXPORTS`` (vkml/frontend/public.py).

Kinds:
- ``elementwise``: ``body(*values) -> Value`` on scalars already converted to the compute
  dtype (float32 for float16 tensors: results are rounded back to float16 after each op).
- ``reduce``: ``combine(left, right) -> value`` over the contract's fixed pairwise tree
  (``left`` always holds the lower indices); for arg-reductions values are (value, index).
- ``movement``: index arithmetic on views; no body.
- ``composite``: built from other ops by ``impl`` (softmax, matmul, ...).
- ``creation``: makes a tensor from Python values.

Public names: an op whose public function is the plain one (``vkml.sin(input)`` records ``sin``,
``vkml.atan2(input, other)`` records ``atan2``, with nothing to check first) says how users reach
it in ``public`` (``Public``): the face makes ``vkml.<name>``, its aliases, the ``Tensor`` method
and the in-place form from that (vkml/frontend/public.py), with no face code of its own.

Gradients: ``grad(ctx) -> tuple`` gives one gradient (a Tensor, or None) per operand, written
with tensor methods and operators and the functions of ``ctx.F`` (see ``vkml/ops/grads.py``
for the context and the rules of composite and movement ops). An op without ``grad`` is not
differentiable: its result never requires grad (comparisons, arg-reductions).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..ir import types as T

# The float dtypes computed in float32 (float16 and bfloat16 round after each op); float64 is not
# one of them: an op takes it only where ``FLOAT64_OPS`` (vkml/ops/float64.py) lists the op.
FLOAT_DTYPES = (T.float32, T.float16, T.bfloat16)
INT_DTYPES = (T.int32, T.int64, T.uint8, T.int8, T.int16)
NUMERIC_DTYPES = FLOAT_DTYPES + INT_DTYPES
ALL_DTYPES = NUMERIC_DTYPES + (T.bool_,)
BACKENDS = ("cpu", "vulkan")


@dataclass(frozen=True)
class Public:
    """The public names of a registered op whose public function is the plain one (see the module's text)."""

    method: bool = True  # Tensor.<name> (and Tensor.<alias>)
    inplace: bool = True  # Tensor.<name>_ (and Tensor.<alias>_): the result written into the tensor
    aliases: tuple[str, ...] = ()  # more names of the same function (PyTorch's numpy-style arcsin for asin)
    dsl: bool = False  # vkml.dsl.<name> too: the op's body for custom ops (its derivative is the OpDef's grad)
    # The operands the public function takes as a Python number, as PyTorch's signatures: "both", "other"
    # (a Scalar overload for other only: torch.eq(1.0, x) is a TypeError), "none" (torch.maximum(x, 1.0) is
    # one). The face's own calls (F.<name>) take numbers anywhere.
    numbers: str = "both"


# eq=False: an OpDef compares and hashes by identity (one object per registered op). Graph nodes hold
# it in their ``arg`` (vkml/graph/node.py), which keys the plan and template caches: hashing every
# field there on every realize would cost more than the key's other parts together.
@dataclass(frozen=True, eq=False)
class OpDef:
    name: str
    kind: str
    signature: str
    summary: str
    dtypes: tuple[T.DType, ...] = NUMERIC_DTYPES
    result: str = "promote"  # promote | float | bool | same | int64 | custom
    body: Callable | None = None
    combine: Callable | None = None
    impl: Callable | None = None
    precision: str = "exact"
    special: str = ""
    divergence: str = ""
    backends: tuple[str, ...] = BACKENDS
    aliases: tuple[str, ...] = field(default_factory=tuple)
    torch_name: str | None = None  # the PyTorch function tests compare with (default: name)
    grad: Callable | None = None  # grad(ctx) -> one gradient (or None) per operand; None: not differentiable
    # reduce: float inputs combine int32 keys, not floats (an ``IntKey`` of vkml/ops/reduce.py)
    int_key: object = None
    # The result shows a NaN input's sign bit (signbit, copysign). The contract does not keep a NaN's
    # bits across devices (a GPU may hand back its canonical NaN), so for NaN inputs such a result may
    # differ between devices; the parity tests compare these ops on non-NaN inputs only.
    reads_nan_sign: bool = False
    # What the graph builder and the kernels need to know, as facts of the op (never its name):
    # reduce: the value over no elements (None: an empty reduction is PyTorch's error); a combine of one
    # instruction (more subgroup results combined serially); values combined with their index and the
    # index returned (argmax, argmin). elementwise: operand 0 is a bool condition outside promotion
    # (where); cheap enough that a row kernel computes it twice rather than store it (add, sub, ...).
    identity: object = None
    cheap_combine: bool = False
    arg: bool = False
    condition: bool = False
    recompute: bool = False
    # The docs page (tools/gen_op_docs.py): the Python operator that calls the op ("a + b"; Tensor's dunder
    # methods are the truth), the public calls that reach it besides vkml.<name> and Tensor.<name>,
    # PyTorch's call where it is not torch.<torch_name>, and why it has no gradient where ``grad`` is None
    # for another reason than a bool or index result.
    operator: str = ""
    reached_through: tuple[str, ...] = ()
    torch_call: str = ""
    no_grad: str = ""
    # vkml.<name> (and its Tensor method, in-place form, aliases) made from the registry alone; None:
    # the face defines the op's public function (it checks arguments, or the op is reached otherwise)
    public: Public | None = None

    def __repr__(self) -> str:
        return f"<OpDef {self.name}>"


REGISTRY: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    if op.name in REGISTRY:
        raise ValueError(f"op {op.name!r} registered twice")
    REGISTRY[op.name] = op
    return op


def get(name: str) -> OpDef:
    return REGISTRY[name]


def ops_of_kind(kind: str) -> list[OpDef]:
    return [op for op in REGISTRY.values() if op.kind == kind]
