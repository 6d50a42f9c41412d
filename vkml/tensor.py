"""``Tensor``: a lazy handle on a graph node, with PyTorch's names.

>>> import vkml
>>> x = vkml.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> y = (x * 2 + 1).sum(dim=1)     # records nodes; nothing runs yet
>>> y.tolist()                      # realizes: one submission
[7.0, 15.0]
"""

from __future__ import annotations

import warnings
import weakref

import numpy as np

from .errors import DTypeError, ShapeError
from .frontend import autograd, creation, defaults, devices, indexing, interop, mutation, pointwise, printing
from .frontend import backward as _backward
from .frontend import memory_format as _memory_format
from .frontend import operators as F
from .frontend.size import Size, as_size
from .graph import build as lazy
from .graph.node import Node
from .ir import types as T
from .ops.cast import bf16_bits_to_float
from .schedule import checks
from .schedule import scheduler as schedule

_new_size = tuple.__new__  # as_size's body, called directly by Tensor.shape


# PyTorch's warn-once text (python_variable_methods.cpp); Python's warning filters decide how often it shows
_FLOAT_OF_GRAD_TENSOR = (
    "Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
    "Consider using tensor.detach() first."
)


class Tensor:
    """A lazy n-dimensional array on one device. Ops record nodes; ``realize()`` runs them."""

    __module__ = "vkml"  # ``<class 'vkml.Tensor'>``, as PyTorch's ``<class 'torch.Tensor'>``

    # _node: the value (for a view, as of base version _seen); _base: the tensor whose storage
    # this one views (None: it owns its storage), _chain: the view steps from it (vkml/frontend/mutation.py);
    # _vcount: the version counter of the storage this tensor owns; _gradview: whether a view
    # rebuilt after a write through its storage records autograd (False for detach()); _vhidden:
    # of the writes to the storage this tensor owns, those made through ``.data`` (PyTorch gives
    # ``.data`` a version counter of its own: they do not count in ``_version``); _dataview: this
    # view was taken through ``.data``.
    __slots__ = (
        "_node",
        "_grad",
        "_requires_grad",
        "_ctx",
        "_base",
        "_chain",
        "_seen",
        "_vcount",
        "_gradview",
        "_vhidden",
        "_dataview",
        "_grad_hooks",  # Tensor.register_hook's hooks: {handle id: (grad_fn then, hook)}
        "_post_accumulate_hooks",  # register_post_accumulate_grad_hook's: {handle id: hook}
        "_retained_ctx",  # the context whose gradient retain_grad() keeps in .grad
        "_format",  # the channels-last format PyTorch would report (vkml/frontend/memory_format.py); unset: none
        "_droot",  # a detached tensor's True, its views' weak reference to it (mutation.detached_root); unset: none
        "__weakref__",
        # Programs set attributes of their own on tensors, as PyTorch's take any (``t.is_label = True``,
        # Megatron's ``param.sequence_parallel``); the dict is made only when one is set.
        "__dict__",
    )
    __hash__ = object.__hash__
    # A numpy scalar or array on the left of an operator defers to the Tensor's reflected method
    # (np.float64(0.5) * t is a Tensor, recorded for autograd, not an ndarray of t's values), as
    # PyTorch's Tensor sets it.
    __array_priority__ = 1000

    def __init__(self, node: Node = None, requires_grad: bool = False, *more, **kwargs):
        if not isinstance(node, Node):  # vkml.Tensor(2, 3), vkml.Tensor([1.0, 2.0]): PyTorch's legacy constructor
            args = () if node is None else (node,)
            if requires_grad is not False:  # a second positional size, not the flag
                args += (requires_grad,)
            node = _legacy_node(args + more, kwargs)
            requires_grad = False
        self._node = node
        self._base = None
        self._vcount = 0
        self._vhidden = 0
        self._grad: Tensor | None = None  # set by backward() on leaves that require grad
        self._ctx = None  # the autograd Context of the op that made this tensor (None: a leaf)
        self._requires_grad = False
        if autograd._mode.inference:  # an inference tensor (vkml/frontend/autograd.py)
            autograd.mark_inference(self)
        if requires_grad:
            self.requires_grad = True

    # ------------------------------------------------------------------ facts
    @property
    def node(self) -> Node:
        """The lazy node of the current value; a view rebuilds it after a write through its storage."""
        base = self._base
        if base is None or self._seen == base._vcount:
            return self._node
        return mutation.refresh(self)

    @node.setter
    def node(self, value: Node) -> None:
        mutation.assign_node(self, value)

    # shape and dtype read the node as ``node`` does, inlined (the two most read properties: a Python
    # property calling another costs a frame more, on every op's checks)
    @property
    def shape(self) -> Size:
        base = self._base
        node = self._node if base is None or self._seen == base._vcount else mutation.refresh(self)
        return _new_size(Size, node.shape)

    def size(self, dim: int | None = None):
        shape = self.node.shape
        return as_size(shape) if dim is None else shape[lazy.normalize_dim("size", dim, len(shape))]

    @property
    def dtype(self) -> T.DType:
        base = self._base
        if base is None or self._seen == base._vcount:
            return self._node.dtype
        return mutation.refresh(self).dtype

    @property
    def device(self):
        return self.node.device

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        return self.ndim

    def is_floating_point(self) -> bool:
        """Whether the dtype is a float dtype (float32, float16), as ``torch.Tensor.is_floating_point``."""
        return self.dtype.is_float

    def numel(self) -> int:
        return self.node.numel

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    # ------------------------------------------------------------------ autograd (vkml/frontend/autograd.py)
    @property
    def grad(self) -> Tensor | None:
        """The gradient backward() accumulated here (leaves that require grad; ``retain_grad()`` tensors)."""
        if self._grad is None and self._ctx is not None and not self.retains_grad:
            autograd.warn_non_leaf_grad()
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        # PyTorch's checks of an assigned gradient: a tensor (or None) of this tensor's dtype and size
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}"
                )
            if value.dtype != self.dtype:
                # PyTorch names the two dtypes as its C++ does: the gradient's type name, the tensor's ScalarType
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{_CPP_TYPE_NAMES.get(value.dtype.name, value.dtype.name)}' "
                    f"to a tensor with grad_dtype '{_SCALAR_TYPE_NAMES.get(self.dtype.name, self.dtype.name)}'. The gradient "
                    "must match the tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's "
                    "grad_dtype attribute with a specific dtype, or None to allow any dtype. Set grad_dtype with caution. "
                    "Diverging the dtypes of a tensor and its gradient may break downstream systems that assume they match."
                )
            if tuple(value.shape) != tuple(self.shape):
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of size "
                    f"'{list(self.shape)}'. Please ensure that the gradient and the tensor are the same size"
                )
        self._grad = value

    @property
    def requires_grad(self) -> bool:
        """Whether backward() computes a gradient for this tensor (only floating point tensors can)."""
        if self._base is not None:
            mutation.current(self)  # a view written through its storage takes its autograd history from its base's
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._set_requires_grad(value, "only Tensors of floating point and complex dtype can require gradients")

    def _set_requires_grad(self, value: bool, not_float_message: str) -> None:
        if value and not self.dtype.is_float:
            raise DTypeError(not_float_message)  # PyTorch's words (DTypeError is also PyTorch's RuntimeError)
        if not value and self._ctx is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
            )
        if value:
            autograd.check_inference_write(self, "requires_grad")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` in place and return the tensor. Example: ``w = vkml.zeros(3).requires_grad_()``."""
        self._set_requires_grad(requires_grad, "only Tensors of floating point dtype can require gradients")
        return self

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; a tensor it returns replaces
        the gradient. Returns a handle; ``handle.remove()`` takes the hook out.

        >>> import vkml
        >>> x = vkml.ones(2, requires_grad=True)
        >>> _ = x.register_hook(lambda g: g * 2)
        >>> (x * 3).sum().backward(); x.grad.tolist()
        [6.0, 6.0]
        """
        return autograd.register_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` after backward has added to this leaf's ``.grad`` (an optimizer step
        per parameter, as PyTorch's). Returns a handle; ``handle.remove()`` takes the hook out.

        >>> import vkml
        >>> w = vkml.ones(2, requires_grad=True)
        >>> _ = w.register_post_accumulate_grad_hook(lambda p: print(p.grad.tolist()))
        >>> (w * 3).sum().backward()
        [3.0, 3.0]
        """
        return autograd.register_post_accumulate_grad_hook(self, hook)

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in ``.grad`` after ``backward()`` (a leaf keeps it anyway)."""
        autograd.retain_grad(self)

    @property
    def retains_grad(self) -> bool:
        """Whether ``retain_grad()`` was called on this non-leaf tensor (for its current history)."""
        return self._ctx is not None and getattr(self, "_retained_ctx", None) is self._ctx

    @property
    def is_leaf(self) -> bool:
        """True unless the tensor was computed by a recorded op (one whose operand required grad)."""
        return self.grad_fn is None

    @property
    def grad_fn(self):
        """The autograd context of the op that made this tensor, or None for a leaf."""
        if self._base is not None:
            mutation.current(self)  # a view written through its storage takes its autograd history from its base's
        return autograd.named_node(self._ctx)

    def backward(
        self, gradient=None, retain_graph: bool | None = None, create_graph: bool = False, inputs=None
    ) -> None:
        """Add the gradient of this tensor to ``.grad`` of the leaves it depends on (of ``inputs`` only, if given).

        Records the gradient graph only: the gradients run when read or at the optimizer's
        ``step()`` (see vkml/frontend/autograd.py for the rule). ``gradient`` is needed unless the
        tensor has one element. ``create_graph=True`` records the gradients' own graph (higher
        derivatives); ``retain_graph`` defaults to it.

        >>> x = vkml.tensor([3.0], requires_grad=True)
        >>> (x * x).sum().backward(); x.grad.tolist()
        [6.0]
        """
        if inputs is not None:
            inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        _backward.backward(self, gradient, retain_graph, create_graph, inputs)

    def detach(self) -> Tensor:
        """The same values, cut off from autograd; shares storage with this tensor (a write through one is seen by the other)."""
        return mutation.detached_view(self)

    # ------------------------------------------------------------------ results
    def realize(self) -> Tensor:
        """Run the work this tensor depends on (one submission per device) and return it."""
        schedule.realize(self.node)
        return self

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The values as a new numpy array (realizes first). bfloat16 has none: PyTorch's TypeError.

        ``force`` is PyTorch's (detach, copy to the host): vkml always returns a host copy, so
        ``force=True`` gives the same array. Unlike PyTorch, a tensor that requires grad or lives on
        a Vulkan device converts without it (docs/interop.md).
        """
        if self.dtype is T.bfloat16:
            raise TypeError("Got unsupported ScalarType BFloat16 (numpy has no bfloat16; use .float().numpy())")
        if self.node.device.kind == "meta":
            raise TypeError(
                "can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
            )
        return self._stored()

    def _stored(self) -> np.ndarray:
        """The stored elements as a numpy array (bfloat16: its bits as int16)."""
        if schedule.recorder is not None:  # a read inside vkml.jit's capture (vkml/frontend/jit.py) raises
            schedule.recorder.read(self)
        self.realize()
        node = self.node
        checks.verify_read(node)  # raises the error of an op whose values were refused (vkml/schedule/checks.py)
        return node.device.download(node.buffer).reshape(node.shape)

    def _host_values(self) -> np.ndarray:
        """The values as numpy holds them: bfloat16 as its exact float32 values."""
        stored = self._stored()
        return bf16_bits_to_float(stored) if self.dtype is T.bfloat16 else stored

    def item(self):
        if self.numel() != 1:
            # PyTorch's RuntimeError; a ShapeError is also the ValueError vkml raised before
            raise ShapeError(f"item(): a Tensor with {self.numel()} elements cannot be converted to Scalar")
        if self.node.device.kind == "meta":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return self._host_values().reshape(()).item()

    def tolist(self):
        return self._host_values().tolist()

    def __repr__(self) -> str:
        """PyTorch's text: ``tensor([1., 2.], requires_grad=True)`` (vkml/frontend/printing.py); realizes the tensor."""
        return printing.tensor_repr(self)

    def __format__(self, format_spec: str) -> str:
        """A 0-dim tensor formats as its value (``f"{loss:.4f}"``); others as ``object`` does, as PyTorch."""
        if not self.shape:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def __bool__(self) -> bool:
        return interop.to_bool(self)

    def __float__(self) -> float:
        """``float(t)``; PyTorch warns when ``t`` requires grad with grad mode on (``float(loss)`` in a
        loop's running sum, say), and so does vkml (``float(t.detach())`` or ``t.item()`` do not warn)."""
        if self.requires_grad and autograd.is_grad_enabled():
            warnings.warn(_FLOAT_OF_GRAD_TENSOR, UserWarning, stacklevel=2)
        return interop.to_scalar(self, float)

    def __int__(self) -> int:
        return interop.to_scalar(self, int)

    def __index__(self) -> int:
        return interop.to_index(self)

    def __array__(self, dtype=None, copy=None):
        return interop.to_array(self, dtype, copy)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """A numpy ufunc's result on this tensor (``np.exp(t)``) as a tensor on the CPU device, as PyTorch's:
        a bool result becomes uint8 there (its legacy rule), and so it does here."""
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return creation.tensor(array, device="cpu")

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of a host copy of the values (vkml/frontend/interop.py)."""
        return interop.dlpack(self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple:
        return interop.dlpack_device(self)

    # ------------------------------------------------------------------ conversions
    def to(self, *args, **kwargs) -> Tensor:
        """PyTorch's forms: ``to(dtype)``, ``to(device, dtype=None)``, ``to(tensor)`` (its device and dtype),
        each with ``non_blocking`` and ``copy``. Casts follow PyTorch (float→int truncates); a device
        is left by an explicit copy. ``"cuda"`` names a Vulkan device (docs/devices.md)."""
        fmt = kwargs.get("memory_format")
        _memory_format.check("to", fmt, self.ndim)
        device, dtype, copy = interop.parse_to(args, kwargs)
        out = self
        if device is not None:
            out = F.to_device(out, device)
        if dtype is not None:
            out = F.cast(out, dtype)
        if copy and out is self:
            out = F.clone(self)
        if fmt is not None and fmt is not _memory_format.preserve_format:
            return _memory_format.convert(out, fmt, copy=out is self)
        return _memory_format.mark(out, _memory_format.format_of(self)) if out is not self else out

    def cpu(self, memory_format=None) -> Tensor:
        return self.to("cpu")

    def cuda(self, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
        """A copy on the Vulkan device ``"cuda"`` names (``best_device()``'s; an int N: ``vulkan:N``)."""
        return self.to("cuda" if device is None else device)

    @property
    def is_cuda(self) -> bool:
        """True on a Vulkan device (what ``"cuda"`` names on vkml), False on the CPU."""
        return self.device.kind == "vulkan"

    @property
    def is_cpu(self) -> bool:
        return self.device.kind == "cpu"

    @property
    def is_meta(self) -> bool:
        """True on the meta device (shapes and dtypes, no data: vkml/runtime/meta.py)."""
        return self.device.kind == "meta"

    def pin_memory(self, device=None) -> Tensor:
        """A copy of this CPU tensor in "pinned" memory, as PyTorch's: a new tensor (a write to it
        does not reach this one) whose ``is_pinned()`` is True. vkml stages host data for its devices
        itself, so the copy is a lazy ``clone`` and costs nothing until used. Without a Vulkan
        device (PyTorch: without an accelerator) it raises, and so does a Vulkan tensor."""
        if self.device.kind != "cpu":
            raise RuntimeError(f"cannot pin a tensor on {self.device.name}: only CPU tensors can be pinned")
        if not devices.usable_vulkan_reports():  # vkml.cuda.is_available()
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if self.is_pinned():
            return self
        out = F.clone(self)
        _pinned[id(out)] = out
        return out

    def is_pinned(self, device=None) -> bool:
        """Whether this tensor's storage was made by ``pin_memory()`` (a view of it is pinned too)."""
        owner = self if self._base is None else self._base
        return _pinned.get(id(owner)) is owner

    def is_inference(self) -> bool:
        """Whether this tensor was made inside ``vkml.inference_mode()`` (``vkml.is_inference``)."""
        return autograd.is_inference(self)

    def get_device(self) -> int:
        """The Vulkan device's index, -1 on the CPU (as PyTorch)."""
        index = self.device.index
        return -1 if index is None else index

    def _cast_to(self, dtype, memory_format) -> Tensor:
        """``self.to(dtype, memory_format=memory_format)``: what ``float()``, ``long()``, ... share."""
        if memory_format is _memory_format.preserve_format:
            return F.cast(self, dtype)
        return self.to(dtype, memory_format=memory_format)

    def float(self, memory_format=_memory_format.preserve_format) -> Tensor:
        return self._cast_to(T.float32, memory_format)

    def half(self, memory_format=_memory_format.preserve_format) -> Tensor:
        return self._cast_to(T.float16, memory_format)

    def double(self, memory_format=_memory_format.preserve_format) -> Tensor:
        return self._cast_to(T.float64, memory_format)

    def bfloat16(self, memory_format=_memory_format.preserve_format) -> Tensor:
        return self._cast_to(T.bfloat16, memory_format)

    def byte(self, memory_format=_memory_format.preserve_format) -> Tensor:
        return self._cast_to(T.uint8, memory_format)

    def char(self, memory_format=_memory_format.preserve_format) -> Tensor:
        return self._cast_to(T.int8, memory_format)

    def short(self, memory_format=_memory_format.preserve_format) -> Tensor:
        return self._cast_to(T.int16, memory_format)

    def int(self, memory_format=_memory_format.preserve_format) -> Tensor:
        return self._cast_to(T.int32, memory_format)

    def long(self, memory_format=_memory_format.preserve_format) -> Tensor:
        return self._cast_to(T.int64, memory_format)

    def bool(self, memory_format=_memory_format.preserve_format) -> Tensor:
        return self._cast_to(T.bool_, memory_format)

    def contiguous(self, memory_format=None) -> Tensor:
        """This tensor if its elements are in row-major order in its storage, else a copy (as PyTorch).
        ``memory_format`` (a channels-last one) asks for that layout instead (vkml/frontend/memory_format.py)."""
        _memory_format.check("contiguous", memory_format, self.ndim)
        if memory_format is _memory_format.preserve_format:
            raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
        if memory_format is None or memory_format is _memory_format.contiguous_format:
            if _memory_format.format_of(self) is not None and not self.is_contiguous():
                return F.clone(self, memory_format=_memory_format.contiguous_format)
            return mutation.contiguous(self)
        return _memory_format.convert(self, memory_format, copy=True)

    # ------------------------------------------------------------------ operators
    def __add__(self, o):
        if not isinstance(o, _OPERANDS):  # PyTorch's: Python then tries the other operand's method
            return NotImplemented
        return F.add(self, _array_operand(self, o))

    def __radd__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return _reflected(F.add(o, self), self, o, "AddBackward0")

    def __sub__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return F.sub(self, _array_operand(self, o))

    def __rsub__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return _reflected(F.sub(o, self), self, o, "RsubBackward1")

    def __mul__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return F.mul(self, _array_operand(self, o))

    def __rmul__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return _reflected(F.mul(o, self), self, o, "MulBackward0")

    def __truediv__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return F.div(self, _array_operand(self, o))

    def __rtruediv__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        # PyTorch's ``o / t`` is ``t.reciprocal() * o`` (two roundings: 3.0 / t is not div(3.0, t))
        if isinstance(o, Tensor):
            return F.div(o, self)
        return F.mul(F.reciprocal(self), o)

    def __pow__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return F.pow(self, _array_operand(self, o))

    def __rpow__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return F.pow(o, self)

    def __matmul__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return F.matmul(self, o)

    def __rmatmul__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return F.matmul(o, self)

    def __neg__(self):
        return F.neg(self)

    def __abs__(self):
        return F.abs(self)

    def __invert__(self):
        if self.dtype.is_float:  # PyTorch's TypeError for the operator (bitwise_not's is NotImplementedError)
            raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
        return pointwise.bitwise_not(self)

    # Bit operators: bitwise on integers, logical on bools (PyTorch's); float tensors are its error.
    def __and__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return pointwise.bitwise_and(self, o)

    def __rand__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return pointwise.bitwise_and(o, self)

    def __or__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return pointwise.bitwise_or(self, o)

    def __ror__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return pointwise.bitwise_or(o, self)

    def __xor__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return pointwise.bitwise_xor(self, o)

    def __rxor__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return pointwise.bitwise_xor(o, self)

    def __lshift__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return pointwise.bitwise_left_shift(self, o)

    def __rlshift__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return pointwise.bitwise_left_shift(o, self)

    def __rshift__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return pointwise.bitwise_right_shift(self, o)

    def __rrshift__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return pointwise.bitwise_right_shift(o, self)

    def __mod__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return pointwise.remainder(self, _array_operand(self, o))

    def __rmod__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return pointwise.remainder(o, self)

    def __floordiv__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return pointwise.floor_divide(self, _array_operand(self, o))

    def __rfloordiv__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return pointwise.floor_divide(o, self)

    def __eq__(self, o):  # noqa: D105 - elementwise, as in PyTorch
        o = _array_operand(self, o)
        if not isinstance(o, _OPERANDS):  # None, a str, a list: False, as PyTorch's (Python's identity test)
            return NotImplemented
        return F.eq(self, o)

    def __ne__(self, o):
        if not isinstance(o, _OPERANDS):
            return NotImplemented
        return F.ne(self, o)

    def __lt__(self, o):
        if not isinstance(o, _OPERANDS):  # Python's TypeError, as PyTorch's
            return NotImplemented
        return F.lt(self, o)

    def __le__(self, o):
        if not isinstance(o, _OPERANDS):  # Python's TypeError, as PyTorch's
            return NotImplemented
        return F.le(self, o)

    def __gt__(self, o):
        if not isinstance(o, _OPERANDS):  # Python's TypeError, as PyTorch's
            return NotImplemented
        return F.gt(self, o)

    def __ge__(self, o):
        if not isinstance(o, _OPERANDS):  # Python's TypeError, as PyTorch's
            return NotImplemented
        return F.ge(self, o)

    def __getitem__(self, index):
        return F.getitem(self, index)

    # ------------------------------------------------------------------ movement
    def reshape(self, *sizes, shape=None):
        return F.reshape(self, *sizes, shape=shape)

    def view(self, *shape, dtype=None, **keyword):
        """``reshape`` that must be a view of this tensor's storage (PyTorch's error otherwise);
        ``view(dtype)``: the same bits read as ``dtype`` (vkml/frontend/dtype_view.py)."""
        if keyword:
            shape = F.keyword_sizes("view", shape, keyword, "size")
        if dtype is not None or (len(shape) == 1 and isinstance(shape[0], T.DType)):
            if shape and dtype is not None:
                raise TypeError("view() received an invalid combination of arguments: both a shape and dtype=")
            return view_dtype(self, dtype if dtype is not None else shape[0])
        out = F.reshape(self, *shape)  # checks the shape
        if self._base is not None:  # a view of a view: reshape's nodes differ, not view's
            if not mutation.viewable(self, out.shape):
                raise RuntimeError(
                    "view size is not compatible with input tensor's size and stride (at least one dimension spans "
                    "across two contiguous subspaces). Use .reshape(...) instead."
                )
            if out._ctx is not None and out is not self:
                autograd.show(out, "ViewBackward0", (autograd.edge(self),))
        return out

    def permute(self, *sizes, dims=None):
        return F.permute(self, *sizes, dims=dims)

    def transpose(self, dim0: int, dim1: int):
        return F.transpose(self, dim0, dim1)

    @property
    def T(self):
        if self.ndim != 2:
            warnings.warn(_T_DEPRECATED[self.ndim == 0], stacklevel=2)
        return F.permute(self, *reversed(range(self.ndim)))

    def expand(self, *sizes, **keyword):
        if keyword:
            sizes = F.keyword_sizes("expand", sizes, keyword, "size")
        return F.expand(self, *sizes)

    def squeeze(self, dim=None, *, axis=None):
        return F.squeeze(self, dim, axis=axis)

    def unsqueeze(self, dim: int | None = None, *, axis=None):
        return F.unsqueeze(self, dim, axis=axis)

    def flip(self, *args, dims=None):
        """``flip(dims)``, or PyTorch's method form ``x.flip(0, 1)`` with the dims as arguments."""
        if dims is None:
            if not args:
                raise TypeError("flip() missing 1 required positional argument: 'dims'")
            dims = args[0] if len(args) == 1 else args
        elif args:
            raise TypeError("flip() got multiple values for argument 'dims'")
        return F.flip(self, dims)

    def flatten(self):
        return F.reshape(self, -1)

    # ------------------------------------------------------------------ mutation (vkml/frontend/mutation.py)
    @property
    def _version(self) -> int:
        """The version counter of this tensor's storage: how many writes it has seen (PyTorch's ``_version``).

        Writes through ``.data`` count apart, as in PyTorch (where ``x.data`` has a counter of its own).
        """
        base = self._base
        if base is None:
            return self._vcount - self._vhidden
        return base._vhidden if self._dataview else base._vcount - base._vhidden

    @property
    def data(self) -> Tensor:
        """This tensor's values, detached from autograd and sharing its storage (its writes are not versioned)."""
        return mutation.detached_view(self, data=True)

    @data.setter
    def data(self, value: Tensor) -> None:
        mutation.set_data(self, value)

    def clone(self, *, memory_format=None) -> Tensor:
        """A copy with its own storage (free: nodes are immutable); gradients flow back to this tensor."""
        _memory_format.check("clone", memory_format, self.ndim)
        return F.clone(self, memory_format=memory_format)

    def detach_(self) -> Tensor:
        return mutation.detach_(self)

    def copy_(self, src, non_blocking: bool = False) -> Tensor:
        """Write ``src`` (broadcast, converted to this dtype and device) into this tensor; returns it."""
        return mutation.copy_(self, src)

    def add_(self, other, *rest, alpha=1) -> Tensor:
        if rest:  # add_(alpha, other): PyTorch's deprecated overload, with its warning
            other, alpha = F._legacy_alpha("add_", other, rest, alpha)
        if alpha == 1:
            return mutation.inplace(self, "add_", F.add, other)
        return mutation.inplace(self, "add_", lambda t, o: F.add(t, o, alpha=alpha), other)  # alpha: as F.add

    def sub_(self, other, *rest, alpha=1) -> Tensor:
        if rest:
            other, alpha = F._legacy_alpha("sub_", other, rest, alpha)
        if alpha == 1:
            return mutation.inplace(self, "sub_", F.sub, other)
        return mutation.inplace(self, "sub_", lambda t, o: F.sub(t, o, alpha=alpha), other)

    def div_(self, other, *, rounding_mode=None) -> Tensor:
        return mutation.inplace(self, "div_", lambda t, o: F.div(t, o, rounding_mode=rounding_mode), other)

    def pow_(self, exponent) -> Tensor:
        return mutation.inplace(self, "pow_", F.pow, exponent)

    def clamp_(self, min=None, max=None) -> Tensor:
        return mutation.inplace(self, "clamp_", F.clamp, min, max)

    clip_ = clamp_

    def fill_(self, value) -> Tensor:
        return mutation.fill_(self, value)

    def zero_(self) -> Tensor:
        return mutation.fill_(self, 0)

    def masked_fill_(self, mask, value) -> Tensor:
        base = mutation.expanded_base(self)
        if base is not None and isinstance(mask, Tensor):
            return mutation.masked_fill_expanded(self, base, "masked_fill_", mask, value)
        return mutation.inplace(self, "masked_fill_", F.masked_fill, mask, value)

    def uniform_(self, a: float = 0.0, b: float = 1.0, *, generator=None) -> Tensor:
        return mutation.uniform_(self, a, b, generator)

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
        return mutation.normal_(self, mean, std, generator)

    def __setitem__(self, index, value) -> None:
        mutation.setitem(self, index, value)

    def index_put_(self, indices, values, accumulate: bool = False) -> Tensor:
        return indexing.index_put_(self, indices, values, accumulate)

    def scatter_(self, dim: int, index, src=None, *, value=None, reduce=None) -> Tensor:
        return indexing.scatter_(self, dim, index, src, value, reduce)

    def scatter(self, dim: int, index, src=None, *, value=None, reduce=None) -> Tensor:
        return indexing.scatter(self, dim, index, src, value, reduce=reduce)

    def scatter_add_(self, dim: int, index, src) -> Tensor:
        return indexing.scatter_add_(self, dim, index, src)

    def scatter_add(self, dim: int, index, src) -> Tensor:
        return indexing.scatter_add(self, dim, index, src)

    def gather(self, dim: int, index, *, sparse_grad: bool = False) -> Tensor:
        return indexing.gather(self, dim, index)

    def index_select(self, dim: int, index) -> Tensor:
        return indexing.index_select(self, dim, index)

    def take_along_dim(self, indices, dim: int | None = None) -> Tensor:
        return indexing.take_along_dim(self, indices, dim)

    def nonzero(self, *, as_tuple: bool = False):
        return indexing.nonzero(self, as_tuple=as_tuple)

    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    def __ipow__(self, other):
        return self.pow_(other)

    def __iand__(self, other):
        return mutation.inplace(self, "__iand__", pointwise.bitwise_and, other)

    def __ior__(self, other):
        return mutation.inplace(self, "__ior__", pointwise.bitwise_or, other)

    def __ixor__(self, other):
        return mutation.inplace(self, "__ixor__", pointwise.bitwise_xor, other)

    def __ilshift__(self, other):
        return mutation.inplace(self, "__ilshift__", pointwise.bitwise_left_shift, other)

    def __irshift__(self, other):
        return mutation.inplace(self, "__irshift__", pointwise.bitwise_right_shift, other)

    def __imod__(self, other):
        return mutation.inplace(self, "__imod__", pointwise.remainder, other)

    def __ifloordiv__(self, other):
        return mutation.inplace(self, "__ifloordiv__", pointwise.floor_divide, other)

    def _saved(self) -> tuple:
        """(node, storage owner, its version): this tensor's value as autograd keeps it (``SavedTensor`` at backward).

        The version is (writes seen by autograd, all writes, view steps from the owner): a write
        through ``.data`` since does not raise, and the rule reads the storage's current value,
        as PyTorch's does.
        """
        if self._base is None:
            return (self._node, self, (self._vcount - self._vhidden, self._vcount, ()))
        node = self.node  # first: a view whose base handed its storage on moves to the new owner
        base = self._base
        return (node, base, (base._vcount - base._vhidden, base._vcount, self._chain))


class SavedTensor(Tensor):
    """A value a gradient rule reads, with the version its storage had when it was saved.

    Reading its node after a write to that storage raises PyTorch's error: the rule would have
    computed with the value as it was, which PyTorch refuses (its saved tensors share storage).
    Shape, dtype and device stay readable: a rule that only needs those does not raise.
    """

    __slots__ = ("_owner", "_expected", "_role")

    def __init__(self, saved: tuple, role: tuple[str, str]):
        """``saved`` is ``Tensor._saved()``'s tuple (its owner may be None: no write can reach it any more)."""
        node, owner, expected = saved
        super().__init__(node)
        self._owner, self._expected, self._role = owner, expected, role

    @property
    def node(self) -> Node:
        owner = self._owner
        if owner is None:
            return self._node
        if autograd._inference_entries and autograd.is_inference_owner(owner):
            raise RuntimeError(autograd.INFERENCE_SAVED)
        visible, writes, chain = self._expected
        if owner._vcount == writes:
            return self._node
        if owner._base is not None:  # the storage went on to another owner since (nn.Parameter(t), unsqueeze_)
            owner, chain = mutation.handed_on(owner, chain)
            if owner._vcount == writes:
                return self._node
        now = owner._vcount - owner._vhidden
        if now != visible:
            raise RuntimeError(self._modified_message(owner, chain, now, visible))
        return mutation.current_value(owner, chain)  # written through .data only: PyTorch reads the storage

    def _modified_message(self, owner, chain: tuple, now: int, visible: int) -> str:
        """PyTorch's words for a saved tensor written in place since: its type and sizes, the node it is
        output 0 of now (its own op's for a saved result; an operand's latest, ``Add`` after ``add_``,
        ``AsStrided`` for a view written through), the versions, and the hint for the anomaly mode."""
        if self._role[0] == "output 0 of":
            node = autograd.grad_fn_name(self._role[1])
        elif chain:
            node = "AsStridedBackward0" if owner.requires_grad else None
        else:
            node = autograd.grad_fn_name(owner._ctx) if owner._ctx is not None else None
        made = "" if node is None else f", which is output 0 of {node.removesuffix('Backward0')},"
        hint = (
            "the backtrace further above shows the operation that failed to compute its gradient. The variable "
            "in question was changed in there or anywhere later. Good luck!"
            if autograd._AnomalyMode.enabled
            else "enable anomaly detection to find the operation that failed to compute its gradient, with "
            "vkml.autograd.set_detect_anomaly(True, check_nan=False)."
        )
        return (
            "one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"[{self.type()} {list(self._node.shape)}]{made} is at version {now}; expected version {visible} "
            f"instead. Hint: {hint}"
        )

    @property
    def shape(self) -> tuple[int, ...]:
        return self._node.shape

    @property
    def dtype(self) -> T.DType:
        return self._node.dtype

    @property
    def device(self):
        return self._node.device

    def numel(self) -> int:
        return self._node.numel


# What ``==`` and ``!=`` compare elementwise; anything else (None, a str, a list) compares by identity,
# as in PyTorch (``x == None`` is False). numpy values and complex numbers go on to the op, which says what it takes.
# The tensors pin_memory() made, keyed by id (a Tensor's == is elementwise); an entry goes with its tensor.
_pinned: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_OPERANDS = (Tensor, bool, int, float, complex, np.generic, np.ndarray)


# PyTorch's warnings for ``Tensor.T`` on a tensor that is not 2-D (index: whether it is 0-D)
_T_DEPRECATED = (
    "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and it will "
    "throw an error in a future release. Consider `x.mT` to transpose batches of matrices or "
    "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor.",
    "Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.",
)


def _array_operand(tensor: Tensor, other):
    """A numpy array on the right of ``tensor + a`` (and -, *, /, **, //, %, ==) as a tensor of its dtype on
    ``tensor``'s device, as PyTorch's operators take it (``t + np.ones(2)`` is float64); anything else as given.
    PyTorch's functions (``add(t, a)``) and comparisons other than == refuse an array, and so do vkml's."""
    if isinstance(other, np.ndarray):
        return creation.tensor(other, device=tensor.device)
    return other


# view(dtype): a bit reinterpretation (vkml/frontend/dtype_view.py); Tensor.view calls it.
def _reflected(out, tensor, number, node_name: str):
    """``number op tensor``'s result shown as PyTorch's node: PyTorch runs it as the tensor's method with
    the number second (``1 - x`` is ``rsub(x, 1)``), so its edges are the tensor's, then the number's."""
    if out._ctx is not None and not isinstance(number, Tensor):
        link = autograd.edge(tensor)
        autograd.show(out, node_name, (link,) if node_name == "RsubBackward1" else (link, (None, 0)))
    return out


from .frontend.dtype_view import view_dtype  # noqa: E402


def _legacy_node(args: tuple, kwargs: dict) -> Node:
    """The node of ``torch.Tensor(*args)``: sizes give zeros of the default dtype (PyTorch's are
    uninitialized), data is copied, no argument gives an empty tensor; ``device=`` is accepted."""
    unknown = set(kwargs) - {"device"}
    if unknown:
        raise TypeError(f"Tensor(): got an unexpected keyword argument {sorted(unknown)[0]!r}")
    device = kwargs.get("device")
    device = devices.get_default_device() if device is None else device
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0].node
    return creation.legacy_new("Tensor", defaults.get_default_dtype(), device, args).node


# PyTorch's C++ names of a dtype in the ``.grad`` assignment error: the gradient's (a type name) and the
# tensor's (a ScalarType)
_CPP_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}
_SCALAR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16"}
