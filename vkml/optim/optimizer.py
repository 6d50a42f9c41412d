"""``Optimizer``: parameter groups, ``zero_grad``, and a ``step`` that is one submission.

``step()`` builds every parameter's update lazily (with recording off), then realizes, in one
``vkml.frontend.realize`` — one submission per device, which the host does not wait for —:

- the new parameter values, which replace each parameter's node (same object, new values);
- the optimizer's state (momentum buffers, Adam's moments);
- the gradients, so ``p.grad`` can be read afterwards at no cost;
- the tensors ``backward()`` was called on since the previous step (vkml/frontend/autograd.py), so
  ``loss.item()`` after ``step()`` costs no submission of its own.

By default ``backward()`` has already submitted the forward and the gradients
(``VKML_BACKWARD_RUNS``, vkml/frontend/autograd.py), so the step's submission holds the update alone,
built while the device computes the gradients; with ``VKML_BACKWARD_RUNS=lazy`` forward,
backward and update of a training step run together in this one submission.
"""

from __future__ import annotations

import functools
import warnings
import weakref
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from typing import Any

from ..frontend import autograd
from ..frontend.creation import tensor
from ..frontend.hooks import RemovableHandle
from ..frontend.host_scalar import HostScalar, host_number
from ..frontend.realize import realize
from ..ir import types as T
from ..tensor import Tensor


class _RequiredParameter:
    """The default of a hyper-parameter every group must give (PyTorch's ``torch.optim.optimizer.required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _update_in_place(state: dict, kept: dict) -> None:
    """Give each state tensor an update replaced (``state["exp_avg"] = new``) its new values in place.

    PyTorch's optimizers update their state tensors in place, so a reference taken earlier
    (``m = opt.state[p]["exp_avg"]``) sees every step; vkml's ``update`` methods compute new tensors.
    The tensor the state held keeps its identity and takes the new values, as ``p`` does.
    """
    for key, before in kept.items():
        after = state.get(key)
        if (
            isinstance(after, Tensor)
            and after is not before
            and after.shape == before.shape
            and after.dtype == before.dtype
            and after.device == before.device
            and before._base is None  # a view's values belong to its base: it is replaced, as before
            and not (before.is_sparse or after.is_sparse)  # a sparse buffer (SGD's, of sparse grads) is replaced
        ):
            before.node = after.node
            state[key] = before


class Optimizer:
    """Base class: ``param_groups`` (dicts with "params" and hyper-parameters) and per-parameter ``state``.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs (the names go to the group's
    ``"param_names"``) or of dicts (parameter groups), checked as PyTorch checks them.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:  # every optimizer's own step runs the step hooks
            cls.step = _with_step_hooks(cls.__dict__["step"])

    def _hook_table(self, name: str) -> OrderedDict:
        table = self.__dict__.get(name)
        if table is None:
            table = self.__dict__[name] = OrderedDict()
        return table

    def _register(self, table: str, hook, prepend: bool = False) -> RemovableHandle:
        hooks = self._hook_table(table)
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` before each ``step``; returning ``(args, kwargs)`` replaces them."""
        return self._register("_optimizer_step_pre_hooks", hook)

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` after each ``step``."""
        return self._register("_optimizer_step_post_hooks", hook)

    def register_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` before ``state_dict()`` builds its result."""
        return self._register("_optimizer_state_dict_pre_hooks", hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` after ``state_dict()``; a returned dict replaces the result."""
        return self._register("_optimizer_state_dict_post_hooks", hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` before ``load_state_dict``; a returned dict is loaded instead."""
        return self._register("_optimizer_load_state_dict_pre_hooks", hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` after ``load_state_dict``."""
        return self._register("_optimizer_load_state_dict_post_hooks", hook, prepend)

    def __init__(self, params: Iterable, defaults: dict[str, Any]):
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, but got "
                f"{_typename(params)}"
            )
        if defaults.get("differentiable"):
            raise NotImplementedError(
                f"{type(self).__name__}: differentiable=True (autograd through the step) is not supported by vkml"
            )
        self.defaults = dict(defaults)
        # PyTorch's defaultdict: an Optimizer subclass a user writes fills self.state[p][...] at its first step
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __getstate__(self) -> dict:
        """What pickling keeps (``torch.save(optimizer)``): hyper-parameters, state and groups, as PyTorch's;
        hooks and an LR scheduler's wrapper of ``step`` on the instance stay behind."""
        return {k: v for k, v in self.__dict__.items() if k != "step" and not k.startswith("_optimizer_")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def add_param_group(self, param_group: dict) -> None:
        """Add a group: its own hyper-parameters, the optimizer's defaults for the others.

        >>> import vkml
        >>> w, b = vkml.nn.Parameter(vkml.ones(2)), vkml.nn.Parameter(vkml.ones(1))
        >>> opt = vkml.optim.SGD([w], lr=0.1)
        >>> opt.add_param_group({"params": b, "lr": 0.5})
        >>> [g["lr"] for g in opt.param_groups]
        [0.1, 0.5]
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering of tensors "
                "in sets will change between runs. Please use a list instead."
            )
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        # a complex parameter is updated through its real pair, as PyTorch's optimizers use view_as_real
        pairs = [p._pair for p in params if getattr(p, "_pair", None) is not None]
        if pairs and self._complex_refused == "construction":
            raise ValueError(f"{type(self).__name__} does not support complex parameters")
        if pairs:  # by id, held weakly; pickling leaves it behind (names starting _optimizer_), as the hooks
            known = self.__dict__.setdefault("_optimizer_complex_pairs", {})
            known.update((id(pair), weakref.ref(pair)) for pair in pairs)
        params = [p._pair if getattr(p, "_pair", None) is not None else p for p in params]
        group = dict(param_group)
        group["params"] = params
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            group["param_names"] = names
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {_typename(p)}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        if group.get("differentiable"):
            raise NotImplementedError(
                f"{type(self).__name__}: differentiable=True (autograd through the step) is not supported by vkml"
            )
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            group.setdefault(name, default)
        if len({id(p) for p in params}) != len(params):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this will cause an error; "
                "see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=2,
            )
        seen = set()
        for other in self.param_groups:
            seen.update(id(p) for p in other["params"])
            if ("param_names" in group) != ("param_names" in other):
                which = "with names" if "param_names" in group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {which} to the optimizer"
                )
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients: set them to None (PyTorch's default), or zero them in place.

        >>> import vkml
        >>> w = vkml.nn.Parameter(vkml.ones(2))
        >>> opt = vkml.optim.SGD([w], lr=0.1)
        >>> (w * w).sum().backward(); opt.zero_grad(set_to_none=False)
        >>> w.grad.tolist()
        [0.0, 0.0]
        """
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    with autograd.no_grad():
                        p.grad = p.grad.detach() if p.grad.grad_fn is not None else p.grad
                        p.grad.requires_grad_(False)
                        p.grad.zero_()

    def step(self, closure=None):
        """Update every parameter that has a gradient; one submission, not waited for (see the module doc)."""
        loss = None
        if closure is not None:
            with autograd.enable_grad():
                loss = closure()
        updates, targets = [], []
        pending: dict[int, Any] = {}
        with autograd.no_grad():
            for group in self.param_groups:
                if self._group_step is not None and self._group_step(group, updates, targets):
                    continue  # the subclass's loop for the usual group (Adam's fused nodes) did the group
                for p in group["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    if id(p) in pending:
                        # a parameter listed twice in a group is updated twice, the second update
                        # from the first's result and state, as PyTorch's in-place loop does
                        p.node = pending[id(p)].node
                    if grad.__class__ is not Tensor and grad.is_sparse:  # a plain Tensor is never sparse
                        self._check_sparse_grad()
                    if self._complex_refused == "step" and self.is_complex_pair(p):
                        raise RuntimeError(f"{type(self).__name__} does not support complex parameters")
                    state = self.state.get(p, {})
                    counters = _numbers_of_counters(state, self._host_scalar_state)
                    kept = {k: v for k, v in state.items() if isinstance(v, Tensor)}
                    new = self.update(p, _detached(grad), state, group)
                    _update_in_place(state, kept)
                    pending[id(p)] = new
                    if state:  # as PyTorch, a parameter gets a state entry once its optimizer keeps any
                        self.state[p] = state
                    updates.append((p, new))
                    targets.append(new)
                    targets.append(grad)
                    targets += [v for v in state.values() if isinstance(v, Tensor)]
                    _counters_of_numbers(state, self._host_scalar_state, counters, group)
        targets += autograd.take_backward_roots()
        unique = _realized_together(targets)
        if unique:
            realize(*unique)
        for p, new in updates:
            p.node = new.node
        return loss

    def state_dict(self) -> dict:
        """PyTorch's layout: ``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``.

        Parameters are numbered across groups in order; ``state`` holds the tensors themselves
        (no copy), so ``vkml.save(opt.state_dict(), path)`` stores the values of this moment. The
        numbers the host keeps (``step``, ``_float_state``) are saved as PyTorch saves them, 0-d
        float32 tensors (``_saved_tensor_state``), so a checkpoint has PyTorch's structure.

        >>> import vkml
        >>> w = vkml.nn.Parameter(vkml.ones(2))
        >>> vkml.optim.SGD([w], lr=0.1).state_dict()["param_groups"][0]["params"]
        [0]
        """
        for hook in list(self._hook_table("_optimizer_state_dict_pre_hooks").values()):
            hook(self)
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed = {k: v for k, v in group.items() if k != "params"}
            groups.append({**packed, "params": [index[id(p)] for p in group["params"]]})
        state = {index[id(p)]: self._saved_state(s) for p, s in self.state.items() if id(p) in index}
        result = {"state": state, "param_groups": groups}
        for hook in list(self._hook_table("_optimizer_state_dict_post_hooks").values()):
            replaced = hook(self, result)
            if replaced is not None:
                result = replaced
        return result

    def load_state_dict(self, state_dict: dict) -> None:
        """Take the state and hyper-parameters of ``state_dict`` (from vkml's or PyTorch's ``state_dict()``).

        Tensors (vkml, torch or numpy) become vkml tensors on their parameter's device, float ones
        in its dtype; ``step`` (and the other ``_host_scalar_state``) a ``HostScalar``. Groups keep this
        optimizer's parameters.
        """
        for hook in list(self._hook_table("_optimizer_load_state_dict_pre_hooks").values()):
            replaced = hook(self, state_dict)
            if replaced is not None:
                state_dict = replaced
        groups, saved_groups = self.param_groups, list(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )
        params = {}
        for group, saved in zip(groups, saved_groups):
            params.update(zip(saved["params"], group["params"]))
        self.state = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in params:
                param = params[key]
                self.state[param] = {k: self._loaded_state(k, v, param) for k, v in value.items()}
        self.param_groups = [
            {**{k: _group_value(v) for k, v in saved.items() if k != "params"}, "params": group["params"]}
            for group, saved in zip(groups, saved_groups)
        ]
        if not self._writes_own_step():
            # a state dict from before a flag existed: PyTorch's optimizers' __setstate__ fill their flags in
            for group in self.param_groups:
                for key, default in self.defaults.items():
                    group.setdefault(key, _FLAG_DEFAULTS_OF_OLDER_STATE.get(key, default))
        for hook in list(self._hook_table("_optimizer_load_state_dict_post_hooks").values()):
            hook(self)

    # state entries PyTorch keeps as 0-d float32 tensors and vkml's host computes with (ASGD's eta and
    # mu, NAdam's mu_product; LBFGS's history): ``update`` sees them as Python floats (rounded to
    # float32 as PyTorch's are)
    _float_state: tuple[str, ...] = ()

    # state entries PyTorch keeps as 0-d float32 tensors that vkml's host computes with: ``opt.state``
    # holds them as ``HostScalar`` tensors (vkml/frontend/host_scalar.py), which also keep their number
    # on the host; ``update`` sees the numbers (``state["step"] += 1``) and ``step`` writes them back
    _host_scalar_state: tuple[str, ...] = ("step",)

    # state entries PyTorch's state_dict() holds as 0-d float32 tensors (lists of them for LBFGS's
    # history) where vkml's live state may hold Python numbers: state_dict() gives PyTorch's tensors
    _saved_tensor_state: tuple[str, ...] = ("step",)

    def _writes_own_step(self) -> bool:
        """Whether this is a user's Optimizer subclass with its own ``step`` (SAM, an AdamW written out), not
        one of vkml's ``update`` optimizers: its state holds what its code put there, as in PyTorch."""
        return type(self).update is Optimizer.update and not type(self).__module__.startswith("vkml.")

    def _saved_state(self, state: dict) -> dict:
        out = dict(state)
        if self._writes_own_step():
            return out  # PyTorch saves a user's numbers as numbers (an int step stays an int)
        for key in self._saved_tensor_state:
            if key in out:
                out[key] = _as_scalar_tensor(out[key])
        return out

    def _loaded_state(self, key: str, value, param):
        if self._writes_own_step() and (
            isinstance(value, int | float) or (key == "step" and isinstance(value, Tensor))
        ):
            return value  # PyTorch's policy: numbers as they were saved, a step tensor kept as it is
        if key in self._host_scalar_state:
            number = host_number(value)
            return HostScalar(int(number) if key == "step" and float(number).is_integer() else float(number))
        if key in self._float_state:
            return _host_float(value)
        return _state_value(key, value, param)

    # Whether ``update`` takes a sparse gradient (``nn.Embedding(sparse=True)``'s): PyTorch's SGD and
    # SparseAdam do; the others refuse it with PyTorch's RuntimeError (``_sparse_hint`` ends its text).
    _sparse_grads = False
    _sparse_hint = ""
    _sparse_refuser: str | None = None  # the name in PyTorch's text, where not the class's (AdamW's is Adam's)

    # Where PyTorch refuses complex parameters: None (it takes them), "construction" (ValueError) or
    # "step" (RuntimeError at the first step)
    _complex_refused: str | None = None
    # ``_group_step(group, updates, targets) -> bool``: a subclass's ``step`` loop over a group it can take
    # whole, with the generic loop's effects (state, counters, ``updates``' (p, new) pairs, ``targets``), for
    # less of the host's work a parameter; False (having changed nothing) leaves the group to the generic loop
    _group_step = None

    def is_complex_pair(self, param) -> bool:
        """Whether ``param`` (in ``param_groups``) is the real pair of a complex parameter."""
        held = self.__dict__.get("_optimizer_complex_pairs", {}).get(id(param))
        return held is not None and held() is param

    def _check_sparse_grad(self) -> None:
        if not self._sparse_grads:
            name = self._sparse_refuser or type(self).__name__
            raise RuntimeError(f"{name} does not support sparse gradients{self._sparse_hint}")

    def update(self, param, grad, state: dict, group: dict):
        """The parameter's new value (a lazy tensor); updates ``state`` in place with lazy tensors."""
        raise NotImplementedError

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join(lines + [")"])


# What PyTorch's ``__setstate__`` gives a loaded group without these flags (whatever the optimizer's own were)
_FLAG_DEFAULTS_OF_OLDER_STATE = {
    "maximize": False,
    "foreach": None,
    "fused": None,
    "differentiable": False,
    "capturable": False,
}

# Hooks every optimizer's step runs (``register_optimizer_step_pre_hook``): before its own pre-hooks,
# after its own post-hooks, as PyTorch orders them
_global_step_pre_hooks: OrderedDict = OrderedDict()
_global_step_post_hooks: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook) -> RemovableHandle:
    """``hook(optimizer, args, kwargs)`` before every optimizer's ``step`` (``args`` starts with the
    optimizer, as PyTorch passes it); returning ``(args, kwargs)`` replaces them.

    >>> import vkml
    >>> seen = []
    >>> handle = vkml.optim.optimizer.register_optimizer_step_pre_hook(lambda o, a, k: seen.append(type(o).__name__))
    >>> w = vkml.nn.Parameter(vkml.ones(2)); w.grad = vkml.ones(2)
    >>> vkml.optim.SGD([w], lr=0.1).step(); handle.remove(); seen
    ['SGD']
    """
    handle = RemovableHandle(_global_step_pre_hooks)
    _global_step_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook) -> RemovableHandle:
    """``hook(optimizer, args, kwargs)`` after every optimizer's ``step``."""
    handle = RemovableHandle(_global_step_post_hooks)
    _global_step_post_hooks[handle.id] = hook
    return handle


def _with_step_hooks(step):
    """``step`` running the global and the optimizer's step pre- and post-hooks around it, once per call
    (a subclass's step calling ``super().step()`` runs them once). As in PyTorch the hooks' ``args``
    start with the optimizer, and a pre-hook's replacement ``args`` are what ``step`` is called with."""

    @functools.wraps(step)
    def run(self, *args, **kwargs):
        if self.__dict__.get("_in_step"):
            return step(self, *args, **kwargs)
        args = (self, *args)
        pre = [*_global_step_pre_hooks.values(), *self._hook_table("_optimizer_step_pre_hooks").values()]
        for hook in pre:
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{hook} must return None or a tuple of (new_args, new_kwargs), but got {result}."
                    )
                args, kwargs = result
        self.__dict__["_in_step"] = True
        try:
            out = step(*args, **kwargs)
        finally:
            self.__dict__["_in_step"] = False
        for hook in [*self._hook_table("_optimizer_step_post_hooks").values(), *_global_step_post_hooks.values()]:
            hook(self, args, kwargs)
        return out

    return run


def _realized_together(targets: list) -> list:
    """``targets`` once each, a sparse gradient or buffer as the dense tensors it holds, the host's counters
    (``HostScalar``s holding their number: a realized node) left out: what ``step`` realizes."""
    unique = {}
    for t in targets:
        kind = t.__class__
        if kind is Tensor:  # the usual target: never sparse
            unique[id(t)] = t
        elif kind is HostScalar and t._base is None and t._node is getattr(t, "_number_node", None):
            continue
        elif t.is_sparse:
            unique[id(t._sp_indices)] = t._sp_indices
            unique[id(t._sp_values)] = t._sp_values
        else:
            unique[id(t)] = t
    return list(unique.values())


def _detached(grad: Tensor) -> Tensor:
    """``grad.detach()``, what ``update`` reads (and never writes): ``grad`` itself where it is a plain tensor
    outside autograd (no history, no requires_grad), of which ``detach()`` would make a view of the same
    storage with the same values, at the cost of an op call per parameter and step."""
    if grad.__class__ is Tensor and grad._ctx is None and not grad._requires_grad:
        return grad
    return grad.detach()


def _numbers_of_counters(state: dict, keys: tuple[str, ...]) -> dict:
    """Give ``update`` the numbers of ``state``'s counters (``HostScalar`` tensors, or tensors a user or a
    checkpoint put there): ``state[key]`` becomes the number; returns the tensors taken out."""
    taken = {}
    for key in keys:
        value = state.get(key)
        if isinstance(value, Tensor):
            taken[key] = value
            state[key] = host_number(value)
    return taken


def _counters_of_numbers(state: dict, keys: tuple[str, ...], taken: dict, group: dict) -> None:
    """Put ``update``'s numbers back as 0-d tensors, as PyTorch keeps them: the tensors taken out take the
    new values (a reference held to ``state["step"]`` sees every step, as in PyTorch)."""
    for key in keys:
        number = state.get(key)
        if number is None or isinstance(number, Tensor):
            continue
        held = taken.get(key)
        if isinstance(held, HostScalar) and held._base is None:
            if held._node is not getattr(held, "_number_node", None) or held._number != number:
                held.set_number(number)
            state[key] = held
        else:  # PyTorch's fused path keeps float32 counters whatever the default dtype
            state[key] = HostScalar(number, T.float32 if group.get("fused") else None)


def _state_value(key: str, value, param):
    """One saved state entry, ready for ``param``'s updates: tensors on its device (floats in its dtype)."""
    if key == "step":
        return int(value.item()) if hasattr(value, "item") else int(value)
    if isinstance(value, dict):
        return {k: _state_value(k, v, param) for k, v in value.items()}
    if isinstance(value, list):  # LBFGS's history
        return [_state_value(key, v, param) for v in value]
    if isinstance(value, Tensor):
        value = value.to(param.device)
        return value.to(param.dtype) if value.dtype.is_float and param.dtype.is_float else value
    if hasattr(value, "shape") and hasattr(value, "dtype"):  # a torch tensor or a numpy array
        array = value.detach().cpu().numpy() if hasattr(value, "detach") else value
        out = tensor(array, device=param.device)
        return out.to(param.dtype) if out.dtype.is_float and param.dtype.is_float else out
    return value


def _group_value(value):
    """A saved hyper-parameter as this optimizer keeps it: another framework's tensor (PyTorch's
    tensor ``lr``) becomes a vkml tensor of its values, on the CPU as PyTorch's was saved."""
    if isinstance(value, Tensor) or not (hasattr(value, "shape") and hasattr(value, "dtype")):
        return value
    return tensor(value.detach().cpu().numpy() if hasattr(value, "detach") else value)


def _as_scalar_tensor(value):
    """A host number (or a list of them, None kept) as PyTorch saves it: a 0-d float32 tensor."""
    if isinstance(value, list):
        return [_as_scalar_tensor(v) for v in value]
    if value is None or isinstance(value, Tensor):
        return value
    return tensor(float(value), dtype=T.float32)


def _host_float(value):
    """A saved scalar (a number or a 0-d tensor of any framework), or a list of them, as Python floats."""
    if isinstance(value, list):
        return [_host_float(v) for v in value]
    if value is None:
        return None
    return float(value.item()) if hasattr(value, "item") else float(value)


def _typename(x) -> str:
    """The name PyTorch's errors give an object's type (``torch.typename``'s role): a tensor's legacy
    type name (``vkml.FloatTensor``), else its class's."""
    if isinstance(x, Tensor):
        return x.type()
    cls = type(x)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def check_hyper(name: str, value, low: float = 0.0, message: str | None = None) -> None:
    """PyTorch's check of one hyper-parameter: ``ValueError('Invalid <name>: <value>')`` below ``low``."""
    if not low <= value:
        raise ValueError(f"Invalid {message or name + ' value'}: {value}")


# The constructor arguments PyTorch's optimizers check, by keyword: how each is checked.
def _check_lr(lr) -> None:
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    check_hyper("learning rate", lr, message="learning rate")


_CHECKS = {
    "lr": _check_lr,
    "eps": lambda v: check_hyper("epsilon", v),
    "betas": lambda v: check_betas(v),
    "rho": lambda v: _check_rho(v),
    "etas": lambda v: _check_etas(v),
}


def check_args(**values) -> None:
    """PyTorch's constructor checks of the given arguments, in the order given (its order, so the
    first bad one is the one named): ``lr`` ('Invalid learning rate: -1.0'), ``eps`` ('Invalid
    epsilon value'), ``betas``, ``rho``, ``etas``, and any other non-negative hyper-parameter
    ('Invalid <name> value').

    >>> check_args(lr=0.1, weight_decay=-1)
    Traceback (most recent call last):
    ValueError: Invalid weight_decay value: -1
    """
    for name, value in values.items():
        check = _CHECKS.get(name)
        if check is None:
            check_hyper(name, value)
        else:
            check(value)


def check_fused_foreach(fused, foreach) -> None:
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _check_rho(rho) -> None:
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"Invalid rho value: {rho}")


def _check_etas(etas) -> None:
    if not 0.0 < etas[0] < 1.0 < etas[1]:
        raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")


def maximized(grad, group: dict):
    """The gradient the update descends along: ``-grad`` when the group maximizes."""
    return -grad if group["maximize"] else grad


def check_betas(betas) -> None:
    """PyTorch's check of Adam-style ``betas``: each in [0, 1)."""
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")


Optimizer.step = _with_step_hooks(Optimizer.step)
