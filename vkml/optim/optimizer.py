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

from collections.abc import Iterable
from typing import Any

from ..frontend import autograd
from ..frontend.realize import realize


class Optimizer:
    """Base class: ``param_groups`` (dicts with "params" and hyper-parameters) and per-parameter ``state``."""

    def __init__(self, params: Iterable, defaults: dict[str, Any]):
        self.defaults = dict(defaults)
        self.state: dict = {}
        self.param_groups: list[dict] = []
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__} got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group: dict) -> None:
        params = group["params"]
        params = [params] if hasattr(params, "node") else list(params)
        for p in params:
            if not getattr(p, "requires_grad", False):
                raise ValueError(f"{type(self).__name__}: every parameter must require grad ({p!r} does not)")
        self.param_groups.append({**self.defaults, **group, "params": params})

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients (set to None, as PyTorch's default; or to zeros)."""
        from ..frontend.creation import zeros_like

        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None if set_to_none or p.grad is None else zeros_like(p.grad)

    def step(self, closure=None):
        """Update every parameter that has a gradient; one submission, not waited for (see the module doc)."""
        loss = None
        if closure is not None:
            with autograd.enable_grad():
                loss = closure()
        updates, targets = [], []
        with autograd.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state.setdefault(p, {})
                    new = self.update(p, p.grad.detach(), state, group)
                    updates.append((p, new))
                    targets += [new, p.grad, *(v for v in state.values() if hasattr(v, "node"))]
        targets += autograd.take_backward_roots()
        unique = list({id(t): t for t in targets}.values())
        if unique:
            realize(*unique)
        for p, new in updates:
            p.node = new.node
        return loss

    def state_dict(self) -> dict:
        """PyTorch's layout: ``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``.

        Parameters are numbered across groups in order; ``state`` holds the tensors themselves
        (no copy), so ``vkml.save(opt.state_dict(), path)`` stores the values of this moment.

        >>> import vkml
        >>> w = vkml.nn.Parameter(vkml.ones(2))
        >>> vkml.optim.SGD([w], lr=0.1).state_dict()["param_groups"][0]["params"]
        [0]
        """
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed = {k: v for k, v in group.items() if k != "params"}
            groups.append({**packed, "params": [index[id(p)] for p in group["params"]]})
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Take the state and hyper-parameters of ``state_dict`` (from vkml's or PyTorch's ``state_dict()``).

        Tensors (vkml, torch or numpy) become vkml tensors on their parameter's device, float ones
        in its dtype; ``step`` becomes an int. Groups keep this optimizer's parameters.
        """
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
        self.state = {}
        for key, value in state_dict["state"].items():
            if key in params:
                param = params[key]
                self.state[param] = {k: _state_value(k, v, param) for k, v in value.items()}
        self.param_groups = [
            {**{k: v for k, v in saved.items() if k != "params"}, "params": group["params"]}
            for group, saved in zip(groups, saved_groups)
        ]

    def update(self, param, grad, state: dict, group: dict):
        """The parameter's new value (a lazy tensor); updates ``state`` in place with lazy tensors."""
        raise NotImplementedError

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join(lines + [")"])


def _state_value(key: str, value, param):
    """One saved state entry, ready for ``param``'s updates: tensors on its device (floats in its dtype)."""
    from ..frontend.creation import tensor
    from ..tensor import Tensor

    if key == "step":
        return int(value.item()) if hasattr(value, "item") else int(value)
    if isinstance(value, dict):
        return {k: _state_value(k, v, param) for k, v in value.items()}
    if isinstance(value, Tensor):
        value = value.to(param.device)
        return value.to(param.dtype) if value.dtype.is_float and param.dtype.is_float else value
    if hasattr(value, "shape") and hasattr(value, "dtype"):  # a torch tensor or a numpy array
        array = value.detach().cpu().numpy() if hasattr(value, "detach") else value
        out = tensor(array, device=param.device)
        return out.to(param.dtype) if out.dtype.is_float and param.dtype.is_float else out
    return value
