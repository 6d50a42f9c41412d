"""``@vkml.kernel``: a general kernel written in the DSL, run as its own dispatch.

    >>> import vkml
    >>> from vkml import dsl
    >>> @vkml.kernel(outputs=lambda x: (x.shape, x.dtype))
    ... def double(x, out):
    ...     i = dsl.global_id(0)
    ...     with dsl.if_(i < x.numel):
    ...         out[i] = x[i] * 2.0
    >>> double(vkml.tensor([1.0, 2.0, 3.0])).tolist()
    [2.0, 4.0, 6.0]

The function receives its inputs, then its outputs. A tensor argument arrives as a
``TensorArg``: a storage buffer indexed by a flat (row-major) index ``x[i]`` or a full index
``x[i, j]``, with its Python ``shape``, ``numel`` and ``dtype`` (baked into the kernel, which
is built once per combination of input shapes and dtypes). A Python number arrives as an IR
value (a push constant: float -> float32, int -> int32, bool -> bool), so a new value does
not rebuild the kernel. Values are loaded in their storage type (float16 stays float16;
``dsl.convert`` widens it), except for the dtypes that are no IR type: uint8, int8, int16 and
uint16 load as int32 and bfloat16 as float32 (``x.dtype`` says so), and a store wraps or rounds back.

``outputs(*inputs)`` gives the outputs' ``(shape, dtype)`` (one pair or a list of them) from
the inputs' ``TensorSpec`` (shape, dtype, numel) and the Python numbers; ``grid(*inputs)``
gives the number of workgroups along x, y, z (default: enough along x for one invocation
per element of the first output). An output starts undefined: write every element.

The call returns lazy tensors. When one is realized its inputs are realized first (a view
or an expression becomes a buffer), then the kernel runs as one dispatch in the same
submission; outputs realized together share that dispatch. Custom kernels are not
differentiable.
"""

from __future__ import annotations

import inspect
import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable

from ..errors import DTypeError, IRError, ShapeError
from ..frontend.operators import _wrap
from ..graph import build as lazy
from ..graph.node import Node, Op
from ..ir import builder as B
from ..ir import types as T
from ..ir.core import Kernel, Value
from ..ir.verify import verify_kernel
from ..ops.cast import NARROW_FLOATS, NARROW_INTS, compute_dtype, load_value, narrow, store_value
from ..runtime.base import Dispatch
from .elementwise import identifier, operand
from .errors import at_user_line

MAX_WORKGROUPS = 65535  # per grid dimension: the least every Vulkan device supports
KERNEL_CACHE_SIZE = 64

_building = threading.local()


class TensorSpec:
    """What ``outputs=`` and ``grid=`` see of a tensor argument: its shape and dtype."""

    def __init__(self, shape: tuple[int, ...], dtype: T.DType):
        self.shape, self.dtype = tuple(shape), dtype

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype.name})"


# Tensor dtypes a kernel sees in their compute type (float16 stays float16: it is an IR type).
_CARRIED = NARROW_INTS + tuple(t for t in NARROW_FLOATS if t is not T.float16)


class TensorArg(TensorSpec):
    """A tensor inside a kernel: ``x[i]`` (flat index) or ``x[i, j, ...]`` loads, ``x[...] = v`` stores.

    A tensor of a dtype that is no IR value type is seen in its compute type (``dtype``): uint8,
    int8, int16 and uint16 load as int32 and store wrapped, bfloat16 loads as float32 and stores rounded.
    """

    def __init__(self, ref: B.BufferRef, shape: tuple[int, ...], tensor_dtype: T.DType | None = None):
        self.tensor_dtype = tensor_dtype or ref.dtype
        super().__init__(shape, compute_dtype(self.tensor_dtype) if self.tensor_dtype in _CARRIED else ref.dtype)
        self.ref = ref

    def _flat(self, index):
        if not isinstance(index, tuple):
            return index
        if len(index) != self.ndim:
            raise IndexError(f"{self.ref.decl.name}: {len(index)} indices for a tensor of shape {self.shape}")
        flat, stride = None, 1
        for i, size in reversed(list(zip(index, self.shape))):
            term = i if stride == 1 else i * stride
            flat = term if flat is None else term + flat
            stride *= size
        return flat

    def __getitem__(self, index) -> Value:
        value = self.ref[self._flat(index)]
        return load_value(value, self.tensor_dtype) if self.tensor_dtype in _CARRIED else value

    def __setitem__(self, index, value) -> None:
        if self.tensor_dtype in _CARRIED:
            value = store_value(narrow(B.as_value(value, dtype=self.dtype), self.tensor_dtype), self.tensor_dtype)
        self.ref[self._flat(index)] = value


def shared_array(size: int, dtype: T.DType) -> B.SharedRef:
    """A workgroup-shared array in the kernel being built (``dsl.shared``)."""
    kb = getattr(_building, "kb", None)
    if kb is None:
        raise IRError("dsl.shared(...) is only available in a @vkml.kernel body")
    return kb.shared(f"shared{len(kb.shared_arrays)}", dtype, int(size))


def _param_dtype(value) -> T.DType:
    if isinstance(value, bool):
        return T.bool_
    if isinstance(value, int):
        return T.int32
    return T.float32


def _grid_of(value, what: str) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and d >= 0 for d in dims):
        raise ShapeError(f"{what}: grid must be 1 to 3 non-negative ints (workgroups along x, y, z), got {value!r}")
    if any(d > MAX_WORKGROUPS for d in dims):
        raise ShapeError(
            f"{what}: grid {dims} has more than {MAX_WORKGROUPS} workgroups along one axis; "
            "spread them over y and z, or let each invocation handle several elements"
        )
    return (*dims, 1, 1)[:3]


def _output_specs(value, what: str) -> list[tuple[tuple[int, ...], T.DType]]:
    pairs = [value] if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], T.DType) else list(value)
    specs = []
    for pair in pairs:
        ok = isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[1], T.DType)
        if not ok:
            raise TypeError(f"{what}: outputs= must give (shape, dtype) or a list of them, got {pair!r}")
        shape = tuple(int(s) for s in pair[0])
        if any(s < 0 for s in shape):
            raise ShapeError(f"{what}: output shape {shape} has a negative size")
        specs.append((shape, pair[1]))
    if not specs:
        raise TypeError(f"{what}: outputs= gave no outputs")
    return specs


class CustomKernel:
    """A DSL function with an index space: call it with tensors and numbers; it returns lazy tensors."""

    def __init__(self, fn: Callable, outputs: Callable, grid: Callable | None, local_size, name: str | None):
        if not callable(outputs):
            raise TypeError("@vkml.kernel: outputs= must be a function of the inputs giving (shape, dtype) pairs")
        self.fn, self.outputs, self.grid = fn, outputs, grid
        self.local_size = tuple(int(s) for s in (tuple(local_size) + (1, 1))[:3])
        self.name = "K_" + identifier(name or fn.__name__)
        self.signature = inspect.signature(fn)
        self.__name__, self.__qualname__, self.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
        self.__module__, self.__wrapped__ = fn.__module__, fn
        self._kernels: OrderedDict = OrderedDict()

    def __repr__(self) -> str:
        return f"<vkml custom kernel {self.__qualname__}>"

    @property
    def __signature__(self) -> inspect.Signature:
        """The inputs' part of the function's signature: as many parameters as ``outputs=`` takes."""
        params = list(self.signature.parameters.values())
        takes = inspect.signature(self.outputs).parameters.values()
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in takes):
            return self.signature
        return self.signature.replace(parameters=params[: len(takes)])

    def __call__(self, *args, **kwargs):
        what = f"kernel {self.__name__!r}"
        names, values = self._bind(args, kwargs)
        nodes = [operand(self.__name__, name, v) for name, v in zip(names, values)]
        for name, v in zip(names, nodes):
            if isinstance(v, int) and not isinstance(v, bool) and not -(2**31) <= v < 2**31:
                raise DTypeError(f"{what}: argument {name!r} = {v} does not fit the int32 parameter")
        tensors = [n for n in nodes if isinstance(n, Node)]
        if not tensors:
            raise TypeError(f"{what}: needs at least one vkml.Tensor input")
        device = lazy.check_devices(self.__name__, tensors)
        specs = [TensorSpec(n.shape, n.dtype) if isinstance(n, Node) else n for n in nodes]
        with at_user_line(f"{what} (outputs=)", fallback=self.outputs):
            out_specs = _output_specs(self.outputs(*specs), what)
        all_names = list(self.signature.parameters)
        if len(names) + len(out_specs) != len(all_names):
            raise TypeError(
                f"{what}: {self.__name__}{self.signature} takes {len(all_names)} parameters, but with {len(names)} "
                f"input(s) and {len(out_specs)} output(s) (from outputs=) it would need {len(names) + len(out_specs)}"
            )
        kernel = self._kernel(all_names, specs, out_specs)
        params = {
            name: int(v) if isinstance(v, bool) else v for name, v in zip(names, nodes) if not isinstance(v, Node)
        }
        call = KernelCall(kernel, self._grid(specs, out_specs), names, all_names[len(names) :], out_specs, params)
        outs = [
            Node(Op.KERNEL, tuple(tensors), KernelOutput(call, k), shape, dtype, device)
            for k, (shape, dtype) in enumerate(out_specs)
        ]
        call.out_nodes = [weakref.ref(n) for n in outs]
        results = tuple(_wrap(n) for n in outs)
        return results[0] if len(results) == 1 else results

    def _bind(self, args: tuple, kwargs: dict) -> tuple[list[str], list]:
        """The input parameters' names and the values the call gives them, in order."""
        inputs = self.__signature__
        try:
            if inputs is self.signature:  # outputs= takes *args: as many inputs as given
                bound = inputs.bind_partial(*args, **kwargs)
            else:
                bound = inputs.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}{inputs}: {e} (the outputs are not arguments)") from None
        names = list(bound.arguments)
        if names != list(self.signature.parameters)[: len(names)]:
            raise TypeError(f"kernel {self.__name__!r}: pass the inputs in order (the outputs are not arguments)")
        return names, list(bound.arguments.values())

    def _grid(self, specs: list, out_specs: list) -> tuple[int, int, int]:
        what = f"kernel {self.__name__!r}"
        if self.grid is None:  # one invocation per element of the first output
            return _grid_of(-(-math.prod(out_specs[0][0]) // math.prod(self.local_size)), what)
        with at_user_line(f"{what} (grid=)", fallback=self.grid):
            return _grid_of(self.grid(*specs), what)

    def _kernel(self, names: list[str], specs: list, out_specs: list) -> Kernel:
        """The IR kernel for these input specs (built once per combination, then cached)."""
        key = (
            tuple((s.shape, s.dtype.name) if isinstance(s, TensorSpec) else type(s).__name__ for s in specs),
            tuple((shape, dtype.name) for shape, dtype in out_specs),
        )
        kernel = self._kernels.get(key)
        if kernel is not None:
            self._kernels.move_to_end(key)
            return kernel
        kb = B.KernelBuilder(self.name, self.local_size)
        args = []
        for name, spec in zip(names, specs):
            if isinstance(spec, TensorSpec):
                args.append(TensorArg(kb.buffer(name, T.storage(spec.dtype), "read"), spec.shape, spec.dtype))
            else:  # bool parameters travel as uint32 (0 or 1), as the scheduler's do
                args.append(kb.param(name, T.uint32 if isinstance(spec, bool) else _param_dtype(spec)))
        for name, (shape, dtype) in zip(names[len(specs) :], out_specs):
            args.append(TensorArg(kb.buffer(name, T.storage(dtype), "readwrite"), shape, dtype))
        _building.kb = kb
        try:
            with kb, at_user_line(f"kernel {self.__name__!r}", fallback=self.fn), B.rounding_float_constants():
                args = [B.ne(a, 0) if isinstance(s, bool) else a for a, s in zip(args, specs)] + args[len(specs) :]
                returned = self.fn(*args)
                if returned is not None:
                    raise DTypeError(f"a kernel writes its outputs and returns nothing, got {returned!r}")
        finally:
            _building.kb = None
        kernel = kb.finish()
        try:
            verify_kernel(kernel)
        except IRError as e:
            raise IRError(f"kernel {self.__name__!r}: {e}") from None
        self._kernels[key] = kernel
        if len(self._kernels) > KERNEL_CACHE_SIZE:
            self._kernels.popitem(last=False)
        return kernel


class KernelCall:
    """One call of a custom kernel: the IR, the grid, parameter values, and its output nodes."""

    def __init__(self, kernel: Kernel, grid, input_names, output_names, out_specs, params):
        self.kernel, self.grid, self.params = kernel, grid, params
        self.input_names, self.output_names, self.out_specs = input_names, output_names, out_specs
        self.out_nodes: list[weakref.ref] = []

    def lower(self, node: Node, outputs: dict) -> list[Dispatch]:
        """The dispatch computing ``node`` (and its live siblings, whose entries in ``outputs`` it sets)."""
        if id(node) in outputs:  # a sibling output's dispatch in this same realize wrote it
            return []
        device = node.device
        tensor_names = [n for n in self.input_names if n not in self.params]
        buffers = {name: (s.buffer if s.realized else outputs[id(s)]) for name, s in zip(tensor_names, node.srcs)}
        for name, ref, (shape, dtype) in zip(self.output_names, self.out_nodes, self.out_specs):
            buf = device.allocate(dtype, math.prod(shape))
            sibling = ref()
            if sibling is not None and not sibling.realized:
                outputs[id(sibling)] = buf
            buffers[name] = buf
        if 0 in self.grid:
            return []
        return [Dispatch(self.kernel, self.grid, buffers, dict(self.params))]


class KernelOutput:
    """A ``kernel`` node's ``arg``: output ``index`` of ``call``. The scheduler calls ``lower``."""

    __slots__ = ("call", "index")

    def __init__(self, call: KernelCall, index: int):
        self.call, self.index = call, index

    def lower(self, node: Node, outputs: dict) -> list[Dispatch]:
        return self.call.lower(node, outputs)

    def __repr__(self) -> str:
        return f"<output {self.index} of {self.call.kernel.name}>"


def kernel(
    fn: Callable | None = None,
    *,
    outputs: Callable,
    grid: Callable | None = None,
    local_size=(64, 1, 1),
    name: str | None = None,
):
    """Make ``fn(*inputs, *outputs)`` (DSL code over an index space) a kernel callable on tensors.

    ``outputs(*inputs) -> (shape, dtype) | [(shape, dtype), ...]``; ``grid(*inputs) -> int |
    (x, y, z)`` in workgroups (default: one invocation per element of the first output);
    ``local_size``: the workgroup's shape (x, y, z); ``name``: the kernel's name.

    >>> @kernel(outputs=lambda x: (x.shape, x.dtype), local_size=(64,))
    ... def copy(x, out):
    ...     i = dsl.global_id(0)
    ...     with dsl.if_(i < x.numel):
    ...         out[i] = x[i]
    """

    def make(f: Callable) -> CustomKernel:
        return CustomKernel(f, outputs, grid, local_size, name)

    return make(fn) if fn is not None else make
