"""``Module`` and ``Parameter``: PyTorch's base class for layers and models, with its rules.

A ``Module`` keeps its parameters, buffers and sub-modules in three ordered tables
(``_parameters``, ``_buffers``, ``_modules``), not in its ``__dict__``: attribute access
finds them through ``__getattr__``, and ``__setattr__`` files a value by its type, as in
PyTorch. Assigning a plain tensor to a parameter's name raises ``TypeError`` (it would
otherwise leave ``parameters()`` silently); ``None`` keeps the name registered.

A ``Parameter`` keeps its identity for its whole life: an optimizer step,
``load_state_dict``, ``nn.init`` and ``.to(device)`` give it a new node (new values), never
a new object, so the references a user or an optimizer holds stay valid. The one place that
does this is ``_set_data``.

>>> import vkml
>>> class Affine(Module):
...     def __init__(self):
...         super().__init__()
...         self.scale = Parameter(vkml.ones(2))
...         self.register_buffer("calls", vkml.zeros(()))
...     def forward(self, x):
...         return x * self.scale
>>> [name for name, _ in Affine().named_parameters()], list(Affine().state_dict())
(['scale'], ['scale', 'calls'])
"""

from __future__ import annotations

import functools
import inspect
import sys
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from ..errors import DTypeError
from ..frontend import autograd, creation, devices, memory_format, mutation
from ..frontend.complex import ComplexTensor
from ..frontend.dtypes import python_type_dtype
from ..frontend.size import as_size
from ..ir import types as T
from ..tensor import Tensor
from . import global_hooks
from .backward_hooks import with_backward_hooks
from .global_hooks import register_module_forward_hook, register_module_forward_pre_hook  # noqa: F401 - their old home
from .hooks import RemovableHandle
from .loading import _IncompatibleKeys, checkpoint_values, converted_like

# The (loads, extras) lists of the load_state_dict walks in progress: Module._load_from_state_dict
# collects into the innermost, so that nothing is written unless the whole walk succeeds.
_LOAD_WALKS: list[tuple[list, list]] = []


class Parameter(Tensor):
    """A tensor a ``Module`` trains: a leaf that requires grad (unless told not to).

    >>> Parameter(vkml.zeros(3)).requires_grad
    True
    """

    # Training code marks parameters with attributes of its own (``p._no_weight_decay = True``,
    # Mamba's ``dt_proj.bias._no_reinit``) in the ``__dict__`` every Tensor has; no slots of its own, so
    # a Tensor's class can become Parameter (unpickling does) on every Python version.
    __slots__ = ()
    __module__ = "vkml.nn.parameter"  # PyTorch's file of it, which vkml has too (docs/nn.md, "Class paths")

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is not None and data.dtype.is_complex:  # a handle on a real Parameter: docs/complex.md
            out = ComplexTensor.__new__(ComplexParameter)
            ComplexTensor.__init__(out, Parameter(data._pair, requires_grad))
            return out
        return super().__new__(cls)

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = creation.zeros(0)
        if requires_grad and not data.dtype.is_float:  # PyTorch's constructor words, with a capital letter
            raise DTypeError("Only Tensors of floating point and complex dtype can require gradients")
        super().__init__(data.node, requires_grad=requires_grad)
        # One storage, as PyTorch's: an in-place write to either tensor is seen by the other.
        mutation.share_storage(self, data, t_keeps_storage=isinstance(data, Parameter))

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict) -> Parameter:
        """A copy of the values and ``requires_grad``, without the gradient (as PyTorch's Parameter)."""
        out = super().__deepcopy__(memo)
        out.grad = None
        return out


_SHAPE_MESSAGE = (
    "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
    "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call `forward` to "
    "initialize the parameters before accessing their attributes."
)


def _refuse_use(cls: type, frame) -> ValueError:
    """PyTorch's error for an op on a placeholder (its ``__torch_function__`` refuses all but a few)."""
    return ValueError(
        f"Attempted to use an uninitialized parameter in {frame.f_code.co_name}. This error happens when you are "
        f"using a `LazyModule` or explicitly manipulating `torch.nn.parameter.{cls.__name__}` objects. When using "
        "LazyModules Call `forward` with a dummy batch to initialize the parameters before calling torch functions"
    )


class _UninitializedMixin:
    """What a lazy module's placeholder allows before it is materialized, as PyTorch's
    ``UninitializedTensorMixin``: its dtype and device, ``size()``, casts and moves (``to``, ``half``, ``cuda``,
    which give a placeholder again), ``materialize``; any op raises ``ValueError``, ``.shape`` ``RuntimeError``.
    The empty node a placeholder keeps carries its dtype and device only."""

    __slots__ = ()

    @property
    def node(self):
        raise _refuse_use(type(self), sys._getframe(1))

    @node.setter
    def node(self, value) -> None:
        self._node = value.node if isinstance(value, Tensor) else value

    @property
    def shape(self):
        caller = sys._getframe(1)
        if caller.f_globals.get("__name__", "").startswith("vkml."):  # an op reading it: PyTorch's op refuses
            raise _refuse_use(type(self), caller)
        raise RuntimeError(_SHAPE_MESSAGE)

    @property
    def device(self):
        return self._node.device

    def size(self, dim: int | None = None):
        return as_size(self._node.shape) if dim is None else self._node.shape[dim]

    def share_memory_(self):
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to initialize the "
            "parameters before calling `module.share_memory()`."
        )

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the placeholder ``shape`` (values uninitialised: zeros here) and make it a plain Parameter or tensor."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self._node = creation.zeros(*shape, device=device or self._node.device, dtype=dtype or self._node.dtype).node
        self.__class__ = self.cls_to_become

    def _converted(self, method: str, *args, **kwargs):
        """What ``method`` (``to``, ``half``, ...) gives, as PyTorch's: the placeholder itself where nothing
        changes; else a parameter gives a plain empty tensor and a buffer a placeholder of the new dtype and
        device (``Module._apply`` moves a lazy module's placeholders with either)."""
        out = getattr(Tensor(self._node), method)(*args, **kwargs)
        if (out.dtype, out.device) == (self._node.dtype, self._node.device):
            return self
        if isinstance(self, Parameter):
            return out
        return type(self)(self.requires_grad, device=out.device, dtype=out.dtype)

    def to(self, *args, **kwargs):
        return self._converted("to", *args, **kwargs)

    def half(self):
        return self._converted("half")

    def float(self):
        return self._converted("float")

    def double(self):
        return self._converted("double")

    def bfloat16(self):
        return self._converted("bfloat16")

    def char(self):
        return self._converted("char")

    def short(self):
        return self._converted("short")

    def int(self):
        return self._converted("int")

    def long(self):
        return self._converted("long")

    def cpu(self):
        return self._converted("cpu")

    def cuda(self, *args, **kwargs):
        return self._converted("cuda", *args, **kwargs)

    def type(self, *args, **kwargs):
        return self._converted("type", *args, **kwargs) if args or kwargs else Tensor(self._node).type()

    def detach(self):
        # PyTorch refuses it (ValueError); vkml's Module conversions detach first, so it is the placeholder
        return self

    @property
    def data(self):
        return Tensor(self._node)

    @data.setter
    def data(self, value) -> None:
        _set_data(self, value)

    def __reduce_ex__(self, protocol):
        return type(self), (self.requires_grad,)

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, device=self._node.device, dtype=self._node.dtype)
        return memo[id(self)]

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class UninitializedParameter(_UninitializedMixin, Parameter):
    """A lazy module's parameter before its first call (``LazyLinear``, ``LazyConv2d``, ...): it holds no values,
    only the dtype and device it will have; ``materialize(shape)`` gives it that shape and makes it a plain
    ``Parameter``, as the module's first call does. Its shape cannot be read and ops refuse it, as PyTorch's.

    >>> p = UninitializedParameter()
    >>> p.materialize((2, 3)); type(p).__name__, tuple(p.shape)
    ('Parameter', (2, 3))
    """

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        return Tensor.__new__(cls)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        Parameter.__init__(self, creation.zeros(0, device=device, dtype=dtype), requires_grad)


class UninitializedBuffer(_UninitializedMixin, Tensor):
    """A lazy module's buffer (running statistics) before its first call; ``materialize(shape)`` makes it a
    plain tensor of that shape, as ``UninitializedParameter``'s."""

    __slots__ = ()
    cls_to_become = Tensor

    def __init__(self, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        Tensor.__init__(self, creation.zeros(0, device=device, dtype=dtype).node, requires_grad=requires_grad)
        self.persistent = persistent
        self._is_buffer = True


def uninitialize(t: Tensor) -> Tensor:
    """Make a lazy module's empty placeholder ``t`` (a Parameter or a buffer) its Uninitialized* kind."""
    if t is not None:
        t.__class__ = UninitializedParameter if isinstance(t, Parameter) else UninitializedBuffer
    return t


def is_lazy(param) -> bool:
    """Whether ``param`` is an uninitialised parameter or buffer of a lazy module (``torch.nn.parameter.is_lazy``)."""
    return isinstance(param, _UninitializedMixin)


class ComplexParameter(ComplexTensor, Parameter):
    """A complex ``Parameter``: the handle of a real ``Parameter`` pair (what an optimizer updates)."""

    __slots__ = ()

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        pass  # made whole by Parameter.__new__

    def __repr__(self) -> str:
        return "Parameter containing:\n" + ComplexTensor.__repr__(self)


class _BufferMeta(type):
    """``isinstance(t, Buffer)`` is true of any tensor ``Buffer`` marked, as PyTorch's (``Buffer(t)`` is a plain tensor)."""

    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer and isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False):
            return True
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A tensor that a ``Module`` registers as a buffer when assigned as an attribute (PyTorch's ``nn.Buffer``).

    ``Buffer(t)`` returns ``t.detach()`` (same storage, ``requires_grad`` kept) marked with
    ``persistent``: a non-persistent buffer stays out of ``state_dict``.

    >>> m = Module(); m.steps = Buffer(vkml.zeros(()), persistent=False)
    >>> [name for name, _ in m.named_buffers()], list(m.state_dict())
    (['steps'], [])
    """

    __slots__ = ()
    __module__ = "vkml.nn.parameter"

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            data = creation.zeros(0)
        out = data.detach().requires_grad_(data.requires_grad)
        out.persistent = persistent
        out._is_buffer = True
        return out


_ASSIGN = "assign_to_params_buffers"  # PyTorch's local-metadata key for load_state_dict's ``assign``


class _Load(NamedTuple):
    """One entry ``load_state_dict`` writes: where (module, name, the tensor there) and what (the value
    as ``checkpoint_values`` reads it, and as the state dict holds it, for ``assign``)."""

    module: Module
    name: str
    target: Tensor
    values: Any
    given: Any


def _on_meta(value) -> bool:
    device = getattr(value, "device", None)  # a numpy array has none
    return getattr(device, "kind", None) == "meta"


def _assigned(target: Tensor, given) -> Tensor:
    """What ``load_state_dict(assign=True)`` puts in place of ``target``: the state dict's tensor itself (a
    numpy array or torch tensor as a vkml tensor); for a parameter, a Parameter over it that keeps
    ``target``'s ``requires_grad``, as PyTorch's."""
    if not isinstance(given, Tensor):
        given = creation.tensor(checkpoint_values(given, ""))
    if not isinstance(target, Parameter):
        return given
    if isinstance(given, Parameter):
        return given.requires_grad_(target.requires_grad)
    return Parameter(given, requires_grad=target.requires_grad)


def _without_module(hook: Callable, module, *args):
    """A load_state_dict pre-hook registered without its module (a partial of this pickles, a lambda not)."""
    return hook(*args)


def _set_data(tensor: Tensor, value: Tensor) -> Tensor:
    """Give ``tensor`` the values of ``value`` in place (PyTorch's ``tensor.data = value``); returns ``tensor``.

    The handle keeps its identity (an optimizer holding a parameter sees the new values); it
    takes ``value``'s node, so its shape, dtype and device become ``value``'s: callers check
    them first where PyTorch would. Nodes are immutable, so sharing one with ``value`` is
    safe. Nothing is recorded for autograd. This is the only place ``nn`` rewrites a tensor's
    node: the general in-place machinery can take it over here.
    """
    if isinstance(tensor, ComplexTensor):  # its pair takes the values
        return _set_data(tensor._pair, value._pair if isinstance(value, ComplexTensor) else value)
    if is_lazy(tensor):  # a placeholder keeps no values, views or history: only the dtype and device change
        tensor._node = value._node if is_lazy(value) else value.detach().node
        return tensor
    node = value.detach().node
    if tensor._base is None and (node.shape, node.dtype, node.device) != (tensor.shape, tensor.dtype, tensor.device):
        # a new storage, as PyTorch's ``p.data = v`` (module.half(), .to(device)): the tensor a Parameter
        # was made from, and views taken before, keep the old one
        mutation.leave_storage(tensor, node)
    else:
        with autograd.no_grad():
            tensor.node = node
    if memory_format.ACTIVE:  # the handle takes value's layout too (PyTorch's p.data = v takes its strides)
        memory_format.mark(tensor, memory_format.format_of(value))
    return tensor


def _typename(value) -> str:
    """What PyTorch's ``torch.typename`` says of ``value``: a tensor's (or Parameter's) legacy type name
    ``vkml.FloatTensor``, else ``module.qualname`` (``vkml.nn.modules.linear.Linear``) or a builtin's ``int``."""
    if isinstance(value, Tensor):
        return value.type()
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _addindent(text: str, spaces: int) -> str:
    """Indent every line of ``text`` but the first (how PyTorch nests a child's repr); blank lines stay empty."""
    first, *rest = text.split("\n")
    return "\n".join([first] + [" " * spaces + line if line.strip() else "" for line in rest])


def _is_device(value) -> bool:
    return isinstance(value, str) or hasattr(value, "allocate")


class Module:
    """Base class of layers and models: holds parameters, buffers and sub-modules, found by attribute.

    >>> net = Module()
    >>> net.add_module("fc", vkml.nn.Linear(2, 2))
    >>> [name for name, _ in net.named_parameters()]
    ['fc.weight', 'fc.bias']
    """

    training: bool

    # The state_dict format's version, saved in ``state_dict()._metadata`` per module and handed back to
    # ``_load_from_state_dict`` as ``local_metadata["version"]``: a subclass that changes its keys raises it
    # and converts older checkpoints (BatchNorm's 2 added ``num_batches_tracked``), as in PyTorch
    _version: int = 1

    # Whether __init__ hands its arguments on to the next class in the MRO (a mixin listed after Module)
    call_super_init: bool = False

    def __init__(self, *args, **kwargs) -> None:
        if not self.call_super_init and kwargs:
            raise TypeError(
                f"{type(self).__name__}.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'"
            )
        if not self.call_super_init and args:
            raise TypeError(
                f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} were given"
            )
        # Set through object.__setattr__: our own __setattr__ reads these tables.
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_forward_hooks_with_kwargs", set())
        object.__setattr__(self, "_forward_pre_hooks_with_kwargs", set())
        object.__setattr__(self, "_forward_hooks_always_called", set())
        object.__setattr__(self, "_backward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_backward_hooks", OrderedDict())
        # state_dict's hook tables, which PyTorch's code reads as attributes (an older pickle may lack them)
        for table in (
            "_state_dict_pre_hooks",
            "_state_dict_hooks",
            "_load_state_dict_pre_hooks",
            "_load_state_dict_post_hooks",
        ):
            object.__setattr__(self, table, OrderedDict())
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        if not (
            self._forward_pre_hooks
            or self._forward_hooks
            or self._backward_hooks
            or self._backward_pre_hooks
            or global_hooks._global_forward_pre_hooks
            or global_hooks._global_forward_hooks
            or global_hooks._global_backward_pre_hooks
            or global_hooks._global_backward_hooks
        ):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _forward_with_backward_hooks(self, *args, **kwargs):
        # the global backward hooks (register_module_full_backward_hook) run before the module's own, as PyTorch's
        pre_hooks = [*global_hooks._global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]
        hooks = [*global_hooks._global_backward_hooks.values(), *self._backward_hooks.values()]
        if not (pre_hooks or hooks):
            return self.forward(*args, **kwargs)
        return with_backward_hooks(self, self.forward, args, kwargs, pre_hooks, hooks)

    def _call_with_hooks(self, args: tuple, kwargs: dict):
        # every module's global hooks (register_module_forward_pre_hook) run before its own, as PyTorch's; when
        # anything raises (a pre-hook, forward, a hook), the always_call hooks that have not run yet run then
        output, called = None, set()
        try:
            for hook_id, hook in [*global_hooks._global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()]:
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    result = hook(self, args, kwargs)
                    if result is not None:
                        if not (isinstance(result, tuple) and len(result) == 2):
                            raise RuntimeError(
                                "forward pre-hook must return None or a tuple of (new_args, new_kwargs), but got "
                                f"{result}."
                            )
                        args, kwargs = result
                else:
                    result = hook(self, args)
                    if result is not None:
                        args = result if isinstance(result, tuple) else (result,)
            output = self._forward_with_backward_hooks(*args, **kwargs)
            for hook_id, hook in [*global_hooks._global_forward_hooks.items(), *self._forward_hooks.items()]:
                if (
                    hook_id in self._forward_hooks_always_called
                    or hook_id in global_hooks._global_forward_hooks_always_called
                ):
                    called.add(hook_id)
                if (
                    hook_id in self._forward_hooks_with_kwargs
                    or hook_id in global_hooks._global_forward_hooks_with_kwargs
                ):
                    result = hook(self, args, kwargs, output)
                else:
                    result = hook(self, args, output)
                if result is not None:
                    output = result
            return output
        except Exception:
            self._call_always_called_hooks(args, kwargs, output, called)
            raise

    def _call_always_called_hooks(self, args: tuple, kwargs: dict, output, called: set) -> None:
        """After an error: the hooks registered with ``always_call`` that have not run see the output so far
        (None when forward did not return); their own errors are silenced with PyTorch's warnings."""
        for hook_id, hook in list(global_hooks._global_forward_hooks.items()):
            if hook_id not in global_hooks._global_forward_hooks_always_called or hook_id in called:
                continue
            try:
                result = hook(self, args, output)  # PyTorch's: a global hook gets no kwargs here
                output = output if result is None else result
            except Exception as error:  # the first error is the one to raise
                warnings.warn(
                    "global module forward hook with ``always_call=True`` raised an exception that was silenced as "
                    f"another error was raised in forward: {error}",
                    stacklevel=3,
                )
        for hook_id, hook in list(self._forward_hooks.items()):
            if hook_id not in self._forward_hooks_always_called or hook_id in called:
                continue
            try:
                if hook_id in self._forward_hooks_with_kwargs:
                    result = hook(self, args, kwargs, output)
                else:
                    result = hook(self, args, output)
                output = output if result is None else result
            except Exception as error:
                warnings.warn(
                    "module forward hook with ``always_call=True`` raised an exception that was silenced as "
                    f"another error was raised in forward: {error}",
                    stacklevel=3,
                )

    def register_forward_pre_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, args)`` before ``forward``; a non-None result replaces the arguments.

        >>> lin = vkml.nn.Linear(2, 2)
        >>> handle = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
        >>> handle.remove()
        """
        handle = RemovableHandle(self._forward_pre_hooks, extra=(self._forward_pre_hooks_with_kwargs,))
        self._add_hook(self._forward_pre_hooks, handle.id, hook, prepend)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(handle.id)
        return handle

    def register_forward_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False, always_call: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after ``forward``; a non-None result replaces the output.

        ``always_call``: call it (with output None) also when ``forward`` raises.
        """
        handle = RemovableHandle(
            self._forward_hooks, extra=(self._forward_hooks_with_kwargs, self._forward_hooks_always_called)
        )
        self._add_hook(self._forward_hooks, handle.id, hook, prepend)
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(handle.id)
        if always_call:
            self._forward_hooks_always_called.add(handle.id)
        return handle

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` when the gradient with respect to the module's output is
        computed; a non-None result replaces ``grad_output`` (vkml/nn/backward_hooks.py).

        >>> import vkml
        >>> lin = vkml.nn.Linear(2, 1)
        >>> handle = lin.register_full_backward_pre_hook(lambda m, grad_output: (grad_output[0] * 2,))
        >>> handle.remove()
        """
        handle = RemovableHandle(self._backward_pre_hooks)
        self._add_hook(self._backward_pre_hooks, handle.id, hook, prepend)
        return handle

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` when the gradients with respect to the module's
        inputs are computed; a non-None result replaces ``grad_input`` (vkml/nn/backward_hooks.py:
        modules called with one input requiring grad and returning one tensor).

        >>> import vkml
        >>> lin = vkml.nn.Linear(2, 1)
        >>> seen = []
        >>> handle = lin.register_full_backward_hook(lambda m, gi, go: seen.append(go[0].shape))
        >>> lin(vkml.ones(2, requires_grad=True)).sum().backward()
        >>> seen
        [vkml.Size([1])]
        """
        handle = RemovableHandle(self._backward_hooks)
        self._add_hook(self._backward_hooks, handle.id, hook, prepend)
        return handle

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """PyTorch's deprecated non-full backward hook, given the full hook's arguments.

        PyTorch's ``grad_input`` here is that of the module's last autograd node (for ``Linear``,
        the gradients of its addmm's operands), which vkml does not reproduce: it warns and registers
        ``hook`` as ``register_full_backward_hook`` does, with ``grad_input`` the gradients of the
        module's inputs.
        """
        warnings.warn(
            "vkml: register_backward_hook is deprecated in PyTorch and registered as register_full_backward_hook "
            "(grad_input holds the gradients of the module's inputs, not those of its last operation)",
            stacklevel=2,
        )
        return self.register_full_backward_hook(hook)

    @staticmethod
    def _add_hook(hooks: OrderedDict, hook_id: int, hook: Callable, prepend: bool) -> None:
        hooks[hook_id] = hook
        if prepend:
            hooks.move_to_end(hook_id, last=False)

    # ------------------------------------------------------------------ attributes
    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: parameters, buffers and modules live in tables.
        tables = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in tables and name in tables[table]:
                return tables[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep="_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as parameter '{name}' (vkml.nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            self._modules[name] = global_hooks.registered(
                global_hooks._global_module_registration_hooks, self, name, value
            )
        elif params is not None and name in self._modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as child module '{name}' (vkml.nn.Module or None expected)"
                )
            self._modules[name] = global_hooks.registered(
                global_hooks._global_module_registration_hooks, self, name, value
            )
        elif isinstance(value, Buffer):
            if params is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self._register_assigned_buffer(name, value, value.persistent)
        elif params is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as buffer '{name}' (vkml.nn.Buffer, vkml.Tensor or None expected)"
                )
            self._buffers[name] = global_hooks.registered(
                global_hooks._global_buffer_registration_hooks, self, name, value
            )
        else:
            object.__setattr__(self, name, value)

    def _register_assigned_buffer(self, name: str, value: Buffer, persistent: bool) -> None:
        """``self.name = Buffer(...)``: through register_buffer, which a subclass may override without the
        ``persistent`` argument (then only persistent buffers can be assigned, as in PyTorch)."""
        if (
            type(self).register_buffer is Module.register_buffer
            or "persistent" in inspect.signature(self.register_buffer).parameters
        ):
            self.register_buffer(name, value, persistent)
        elif not persistent:
            raise RuntimeError(
                "Registering a non-persistent buffer on a Module subclass that implements register_buffer() "
                "without the persistent argument is not allowed."
            )
        else:
            self.register_buffer(name, value)

    def _forget(self, name: str, keep: str) -> None:
        """Drop ``name`` from the plain attributes and from every table but ``keep``."""
        self.__dict__.pop(name, None)
        for table in ("_parameters", "_buffers", "_modules"):
            if table != keep:
                self.__dict__[table].pop(name, None)
        if keep != "_buffers":
            self._non_persistent_buffers_set.discard(name)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        keys = [*dir(type(self)), *self.__dict__, *self._parameters, *self._modules, *self._buffers]
        return sorted({key for key in keys if not key[0].isdigit()})

    def _check_new_name(self, kind: str, name, table: str) -> None:
        """PyTorch's checks of a name ``register_*`` is given (``kind``: parameter, buffer)."""
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in self.__dict__[table]:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add ``param`` (a Parameter, or None to reserve the name) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_new_name("parameter", name, "_parameters")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{_typename(param)}' object to parameter '{name}' (vkml.nn.Parameter or None required)"
            )
        if param is not None:
            param = global_hooks.registered(global_hooks._global_parameter_registration_hooks, self, name, param)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is state but not trained (a running mean, a mask): moved by ``to()``, saved if persistent.

        >>> m = Module(); m.register_buffer("mask", vkml.ones(3), persistent=False)
        >>> list(m.state_dict()), [n for n, _ in m.named_buffers()]
        ([], ['mask'])
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_new_name("buffer", name, "_buffers")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{_typename(tensor)}' object to buffer '{name}' (vkml Tensor or None required)"
            )
        self._buffers[name] = global_hooks.registered(
            global_hooks._global_buffer_registration_hooks, self, name, tensor
        )
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add ``module`` (or None to reserve the name) as a child called ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = global_hooks.registered(
            global_hooks._global_module_registration_hooks, self, name, module
        )

    def register_module(self, name: str, module: Module | None) -> None:
        """The same as ``add_module``."""
        self.add_module(name, module)

    def _get_name(self) -> str:
        return type(self).__name__

    def get_submodule(self, target: str) -> Module:
        """The module at dotted path ``target`` (``"encoder.layers.0"``); ``""`` is this module."""
        module = self
        for item in target.split(".") if target else []:
            if not hasattr(module, item):
                raise AttributeError(f"{module._get_name()} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target`` (``"0.weight"``)."""
        return self._get_member(target, Parameter, "nn.Parameter")

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target``."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        if name not in module._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return module._buffers[name]

    def _get_member(self, target: str, kind: type, kind_name: str):
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        member = getattr(module, name)
        if not isinstance(member, kind):
            raise AttributeError(f"`{name}` is not an {kind_name}")
        return member

    # ------------------------------------------------------------------ traversal
    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True):
        """(dotted name, module) for this module and every descendant, pre-order; a shared module once.

        >>> net = vkml.nn.Sequential(vkml.nn.Linear(1, 1), vkml.nn.ReLU())
        >>> [name for name, _ in net.named_modules()]
        ['', '0', '1']
        """
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self, remove_duplicate: bool = True) -> Iterator[Module]:
        """Every module of the tree, this one first; a module reached twice is given once unless
        ``remove_duplicate`` is False (PyTorch's argument)."""
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """(name, module) of the direct children, each module once."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def _named_members(self, table: str, prefix: str, recurse: bool, remove_duplicate: bool):
        # Members are tensors, whose == is elementwise: remember them by id.
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in module.__dict__[table].items():
                if value is None or id(value) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """(dotted name, parameter), in registration order; a tied parameter under its first name only."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """(dotted name, buffer) for persistent and non-persistent buffers alike."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every child (recursively), then on this module; returns this module.

        >>> net = vkml.nn.Sequential(vkml.nn.Linear(2, 2))
        >>> _ = net.apply(lambda m: vkml.nn.init.zeros_(m.bias) if isinstance(m, vkml.nn.Linear) else None)
        """
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ state
    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name, detached (same values, no copy).

        A shared module or a tied parameter appears under every name it has, as in PyTorch. The old
        positional form ``state_dict(destination, prefix, keep_vars)`` still works, with PyTorch's
        FutureWarning.
        """
        if args:
            warnings.warn(
                "Positional args are being deprecated, use kwargs instead. Refer to "
                "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict for details.",
                FutureWarning,
                stacklevel=2,
            )
            if destination is None and len(args) > 0:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in list(self.__dict__.get("_state_dict_pre_hooks", {}).values()):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=f"{prefix}{name}.", keep_vars=keep_vars)
        for hook in list(self.__dict__.get("_state_dict_hooks", {}).values()):
            replaced = hook(self, destination, prefix, local_metadata)
            if replaced is not None:
                if not getattr(hook, "_may_replace", False):
                    raise RuntimeError("state_dict post-hook must return None")
                destination = replaced  # a private-API hook may give a new state_dict, as PyTorch's
        return destination

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """Write this module's own state (not its children's) into ``destination``: PyTorch's hook, which
        subclasses override to save more or other entries (quantized layers, fairseq's modules)."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buffer if keep_vars else buffer.detach()
        if self._has_extra_state():
            destination[prefix + "_extra_state"] = self.get_extra_state()

    def _local_state(self) -> dict[str, Tensor]:
        state = {k: v for k, v in self._parameters.items() if v is not None}
        state.update(
            (k, v) for k, v in self._buffers.items() if v is not None and k not in self._non_persistent_buffers_set
        )
        return state

    def _match_state(
        self,
        state_dict: Mapping,
        prefix: str,
        loads: list,
        missing: list,
        unexpected: list,
        errors: list,
        extras: list | None = None,
        assign: bool = False,
        metadata: Mapping | None = None,
    ):
        """PyTorch's ``load`` walk, without writing: each module's ``_load_from_state_dict`` (an override
        included) collects what to load into ``loads`` and ``extras`` and what is wrong. ``metadata``: the
        state dict's ``_metadata`` (each module's saved ``version``), where it has one."""
        extras = [] if extras is None else extras
        _LOAD_WALKS.append((loads, extras))
        local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
        if assign:
            local_metadata[_ASSIGN] = True  # PyTorch passes ``assign`` so, in the local metadata
        try:
            self._load_from_state_dict(state_dict, prefix, local_metadata, True, missing, unexpected, errors)
        finally:
            _LOAD_WALKS.pop()
        for name, module in self._modules.items():
            if module is not None:
                # each child is handed its own entries only, as PyTorch's (its load pre-hooks see those)
                child_prefix = f"{prefix}{name}."
                child_state = {k: v for k, v in state_dict.items() if k.startswith(child_prefix)}
                module._match_state(
                    child_state, child_prefix, loads, missing, unexpected, errors, extras, assign, metadata
                )

    def _load_from_state_dict(
        self,
        state_dict: Mapping,
        prefix: str,
        local_metadata: dict,
        strict: bool,
        missing_keys: list,
        unexpected_keys: list,
        error_msgs: list,
    ) -> None:
        """This module's own parameters and buffers from ``state_dict`` (children are not visited).

        Modules override it to edit ``state_dict`` before calling it (torchvision's FrozenBatchNorm2d
        drops ``num_batches_tracked``). Inside ``load_state_dict`` the values are collected and written
        after the whole walk; called on its own it writes them at once, as PyTorch."""
        for hook in list(self.__dict__.get("_load_state_dict_pre_hooks", {}).values()):
            hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        loads, extras = _LOAD_WALKS[-1] if _LOAD_WALKS else ([], [])
        if self._takes_extra_state() and prefix + "_extra_state" not in state_dict:
            missing_keys.append(prefix + "_extra_state")
        local = self._local_state()
        for name, target in local.items():
            key = prefix + name
            if key not in state_dict:
                missing_keys.append(key)
                continue
            if is_lazy(target) or is_lazy(state_dict[key]):
                if not is_lazy(target):  # PyTorch reads the placeholder's shape, which raises
                    raise RuntimeError(_SHAPE_MESSAGE)
                continue  # a placeholder to keep (a lazy module's load hook materialized those it could)
            try:
                values = checkpoint_values(state_dict[key], key)
            except TypeError as error:  # PyTorch reports it with the other errors
                error_msgs.append(str(error))
                continue
            given = state_dict[key]
            if len(target.shape) == 0 and tuple(values.shape) == (1,):  # PyTorch 0.3's scalars, as PyTorch loads them
                values, given = values[0], given[0]
            if tuple(values.shape) != target.shape:
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {as_size(tuple(values.shape))} from checkpoint, "
                    f"the shape in current model is {target.shape}."
                )
                continue
            if _on_meta(target) and not _on_meta(values) and not local_metadata.get(_ASSIGN):
                warnings.warn(
                    f"for {key}: copying from a non-meta parameter in the checkpoint to a meta parameter in the "
                    "current model, which is a no-op. (Did you mean to pass `assign=True` to assign items in the "
                    "state dictionary to their corresponding key in the module instead of copying them in place?)",
                    stacklevel=2,
                )
            loads.append(_Load(self, name, target, values, given))
        for key in state_dict:
            if not key.startswith(prefix):
                continue
            head, dot, _ = key[len(prefix) :].partition(".")
            if not dot and head == "_extra_state" and self._takes_extra_state():
                extras.append((self, state_dict[key]))
            elif strict and ((dot and head not in self._modules) or (not dot and head not in local)):
                unexpected_keys.append(key)
        if not _LOAD_WALKS:
            self._write_loaded(loads, extras, local_metadata.get(_ASSIGN, False))

    def load_state_dict(self, state_dict: Mapping, strict: bool = True, assign: bool = False) -> _IncompatibleKeys:
        """Copy values into the parameters and persistent buffers, keeping every tensor object.

        Values may be vkml tensors, numpy arrays or torch tensors; they are cast to each
        target's dtype and device (as ``copy_``). ``strict``: missing or unexpected keys
        raise. Unlike PyTorch, nothing is written when an error is raised — unless load post-hooks
        are registered: then PyTorch's order (write, call the hooks, which may forgive keys, check).

        ``assign=True`` puts the state dict's tensors in the module instead (their dtype and device
        kept, a parameter a new ``Parameter`` over the value with the old one's ``requires_grad``),
        as PyTorch's: how a model built on the meta device takes a checkpoint's tensors.

        >>> net = vkml.nn.Linear(2, 2)
        >>> net.load_state_dict(net.state_dict())
        <All keys matched successfully>
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        loads, missing, unexpected, errors, extras = [], [], [], [], []
        # a copy, as PyTorch: an overridden _load_from_state_dict may delete or add keys
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata
        self._match_state(state_dict, "", loads, missing, unexpected, errors, extras, assign, metadata)
        result = _IncompatibleKeys(missing, unexpected)
        post_hooks = [
            (module, hook)
            for module in self.modules()
            for hook in list(module.__dict__.get("_load_state_dict_post_hooks", {}).values())
        ]
        if post_hooks and not errors:
            # PyTorch's order: values written, post-hooks (which may forgive keys), then the strict check
            self._write_loaded(loads, extras, assign)
            for module, hook in post_hooks:
                hook(module, result)
            self._raise_load_errors(strict, result.missing_keys, result.unexpected_keys, errors)
            return result
        self._raise_load_errors(strict, missing, unexpected, errors)
        self._write_loaded(loads, extras, assign)
        return result

    def _raise_load_errors(self, strict: bool, missing: list, unexpected: list, errors: list) -> None:
        errors = list(errors)
        if strict:
            if unexpected:
                errors.insert(
                    0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected))
                )
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {self._get_name()}:\n\t" + "\n\t".join(errors))

    @staticmethod
    def _write_loaded(loads: list[_Load], extras: list, assign: bool = False) -> None:
        if assign:
            for load in loads:
                load.module.__setattr__(load.name, _assigned(load.target, load.given))
        else:
            converted = [(load.target, converted_like(load.values, load.target)) for load in loads]
            for target, value in converted:
                _set_data(target, value)
        for module, state in extras:
            module.set_extra_state(state)

    # ------------------------------------------------------------------ state hooks, extra state, misc
    def _hook_table(self, name: str) -> OrderedDict:
        table = self.__dict__.get(name)
        if table is None:
            table = OrderedDict()
            object.__setattr__(self, name, table)
        return table

    def _register_state_hook(self, table: str, hook: Callable) -> RemovableHandle:
        hooks = self._hook_table(table)
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, prefix, keep_vars)`` before ``state_dict()`` collects this module's entries."""
        return self._register_state_hook("_state_dict_pre_hooks", hook)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata)`` after this module's entries are in; it edits
        ``state_dict`` in place (``local_metadata``: ``{"version": module._version}``)."""
        return self._register_state_hook("_state_dict_hooks", hook)

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        """PyTorch's older, private form of ``register_state_dict_post_hook``, which third-party code still
        calls: the same ``hook(module, state_dict, prefix, local_metadata)``, which may also return a new
        state_dict to use instead."""

        @functools.wraps(hook)
        def may_replace(*args):
            return hook(*args)

        may_replace._may_replace = True
        return self._register_state_hook("_state_dict_hooks", may_replace)

    def _register_load_state_dict_pre_hook(self, hook: Callable, with_module: bool = False) -> RemovableHandle:
        """PyTorch's older, private form of ``register_load_state_dict_pre_hook``, which third-party code still
        calls: ``hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)``,
        with the module first only when ``with_module``."""
        if with_module:
            return self.register_load_state_dict_pre_hook(hook)
        return self.register_load_state_dict_pre_hook(functools.partial(_without_module, hook))

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` before this module's entries are matched; it may edit ``state_dict`` in place."""
        return self._register_state_hook("_load_state_dict_pre_hooks", hook)

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, incompatible_keys)`` after ``load_state_dict``; it may edit the key lists."""
        return self._register_state_hook("_load_state_dict_post_hooks", hook)

    def get_extra_state(self) -> Any:
        """Override (with ``set_extra_state``) to keep extra state under ``"_extra_state"`` in ``state_dict``."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called. Please file an issue at "
            "https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to report this bug."
        )

    def set_extra_state(self, state: Any) -> None:
        """Override to restore what ``get_extra_state`` returned."""
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called. Please file an issue at "
            "https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to report this bug."
        )

    def _has_extra_state(self) -> bool:
        return type(self).get_extra_state is not Module.get_extra_state

    def _takes_extra_state(self) -> bool:
        """Whether load_state_dict expects ``"_extra_state"``: PyTorch asks set_extra_state's override, so a
        module with only get_extra_state reports the key as unexpected, one with only set_extra_state as missing."""
        return type(self).set_extra_state is not Module.set_extra_state

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Put ``module`` at dotted path ``target``; ``strict``: the last name must already exist."""
        if not target:
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        *path, name = target.split(".")
        parent = self.get_submodule(".".join(path))
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def to_empty(self, *, device, recurse: bool = True) -> Module:
        """Move parameters and buffers to ``device`` without their values (PyTorch leaves them
        uninitialized; vkml fills zeros, its ``empty``): how a model built on the meta device gets storage.

        A parameter leaving the meta device becomes a new ``Parameter`` in each module that holds it, as
        PyTorch's (a meta tensor cannot take another device's storage in place): weights tied across
        modules come apart, and programs tie them again after ``to_empty``.

        >>> with vkml.device("meta"):
        ...     lin = vkml.nn.Linear(2, 2)
        >>> lin.to_empty(device="cpu").weight.device
        device('cpu')
        """
        target = devices.device(device)

        def empty(t: Tensor) -> Tensor:
            return creation.zeros(t.shape, dtype=t.dtype, device=target)

        if target.kind == "meta" or not any(_on_meta(p) for p in self.parameters(recurse=recurse)):
            return self._apply_to_tensors(empty, recurse)
        with autograd.no_grad():
            for module in self.modules() if recurse else (self,):
                for name, param in module._parameters.items():
                    if param is None:
                        continue
                    if _on_meta(param):
                        module._parameters[name] = Parameter(empty(param), requires_grad=param.requires_grad)
                    else:
                        _set_data(param, empty(param))
                for name, buffer in module._buffers.items():
                    if buffer is not None:
                        module._buffers[name] = empty(buffer)
        return self

    def type(self, dst_type) -> Module:
        """Cast every parameter and buffer to ``dst_type`` in place: a dtype, or as ``Tensor.type`` a legacy type
        (``model.type(torch.DoubleTensor)`` in older code) or its name, which also names the device kind."""
        legacy = isinstance(dst_type, str) or getattr(dst_type, "is_legacy_tensor_type", False)
        if not (legacy or isinstance(dst_type, T.DType)):
            raise TypeError(f"type(): dst_type must be a vkml dtype, got {dst_type!r}")
        return self._apply_to_tensors(lambda t: t.detach().type(dst_type))

    def share_memory(self) -> Module:
        """This module, its parameters, their gradients and its buffers marked shared (``is_shared()``), as
        PyTorch's. vkml's DataLoader workers send batches, never parameters, so no storage moves (PyTorch
        moves them to shared memory for multiprocessing); Hogwild-style code that checks sees PyTorch's answer.
        """
        for tensor in [*self.parameters(), *self.buffers()]:
            tensor.share_memory_()
            if tensor.grad is not None:
                tensor.grad.share_memory_()
        return self

    def compile(self, *args, **kwargs) -> None:
        """As ``torch.nn.Module.compile``, but nothing to do: vkml already fuses each realize's graph into
        kernels (see ``vkml.compile``, the identity)."""
        return None

    # ------------------------------------------------------------------ conversion
    def _apply_to_tensors(self, convert: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        """Convert every parameter (in place: same object), and its gradient and every buffer (new tensors)."""
        return self._apply(convert, recurse)

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        """``fn`` on the children's tensors (each child's own ``_apply``), then on this module's parameters (in
        place), their gradients and its buffers: PyTorch's hook under ``to``, ``half``, ``cuda``, ...; a module
        that caches plain tensor attributes (rotary tables) overrides it to convert them too."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        with autograd.no_grad():
            for param in self._parameters.values():
                if param is None:
                    continue
                _set_data(param, fn(param))
                if param.grad is not None:  # a new gradient tensor: a gradient may be a view
                    param.grad = fn(param.grad)
            for name, buffer in self._buffers.items():
                if buffer is not None:
                    self._buffers[name] = fn(buffer)
        return self

    def to(self, *args, **kwargs) -> Module:
        """Move every parameter and buffer to a device and/or cast the floating ones to a dtype; in place.

        ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)`` (its device and
        dtype), and the keywords ``device=``, ``dtype=``. Parameters stay the same objects.

        >>> lin = vkml.nn.Linear(2, 2).to(vkml.float16)
        >>> lin.weight.dtype
        vkml.float16
        """
        fmt = kwargs.get("memory_format")
        device, dtype = self._parse_to(args, kwargs)
        if dtype is not None and not dtype.is_float:
            raise TypeError(
                f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={dtype!r}"
            )

        if device is not None and _is_device(device) and devices.device(device).kind != "meta":
            if any(_on_meta(t) for t in (*self.parameters(), *self.buffers())):
                raise NotImplementedError(
                    "Cannot copy out of meta tensor; no data! Please use torch.nn.Module.to_empty() instead of "
                    "torch.nn.Module.to() when moving module from meta to a different device."
                )

        def convert(t: Tensor) -> Tensor:
            out = t.detach()
            if device is not None:
                out = out.to(device)
            if dtype is not None and out.dtype.is_float:
                out = out.to(dtype)
            if fmt is not None and fmt.rank == out.ndim:  # PyTorch converts the 4-D (5-D) ones alone
                out = out.contiguous(memory_format=fmt)
            return out

        return self._apply_to_tensors(convert)

    @staticmethod
    def _parse_to(args: tuple, kwargs: dict):
        device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
        kwargs.pop("non_blocking", None)
        if "copy" in kwargs:
            raise RuntimeError(".to() does not accept copy argument")
        # PyTorch converts the 4-D (5-D) parameters to the format (Module.to; memory_format.py)
        memory_format.check("to", kwargs.pop("memory_format", None))
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        if len(args) > 2:
            raise TypeError(f"to() takes at most 2 positional arguments, got {len(args)}")
        for arg in args:
            if isinstance(arg, Tensor):
                device, dtype = arg.device, arg.dtype
            elif isinstance(python_type_dtype(arg), T.DType):
                dtype = python_type_dtype(arg)
            elif _is_device(arg):
                device = arg
            else:
                raise TypeError(f"to() received an invalid combination of arguments: {arg!r}")
        return device, python_type_dtype(dtype)

    def cpu(self) -> Module:
        return self.to("cpu")

    def cuda(self, device=None) -> Module:
        """Move to the Vulkan device ``"cuda"`` names (``best_device()``'s; an int N: ``vulkan:N``), in place."""
        return self.to(devices.device("cuda" if device is None else device))

    def float(self) -> Module:
        """Cast floating point parameters and buffers to float32."""
        return self.to(T.float32)

    def half(self) -> Module:
        """Cast floating point parameters and buffers to float16."""
        return self.to(T.float16)

    def double(self) -> Module:
        """Cast floating point parameters and buffers to float64 (docs/dtypes.md: the ops that take it)."""
        return self.to(T.float64)

    def bfloat16(self) -> Module:
        """Cast floating point parameters and buffers to bfloat16."""
        return self.to(T.bfloat16)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set ``requires_grad`` of every parameter (to freeze or unfreeze a part of a model)."""
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def train(self, mode: bool = True) -> Module:
        """Training mode (dropout active) for this module and every sub-module."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every parameter's gradient (``set_to_none``), or zero it in place."""
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                _set_data(param.grad, creation.zeros_like(param.grad))

    # ------------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        """The text between this module's parentheses in ``repr`` (its settings); subclasses override it."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + _addindent(repr(module), 2) for name, module in self._modules.items()]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"
