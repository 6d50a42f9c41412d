"""``Optimizer``: parameter groups, ``zero_grad``, and a ``step`` that is one submission.

``step()`` builds every parameter's update lazily (with recording off), then realizes, in one
``vkml.realize`` — one submission per device, which the host does not wait for —:

- the new parameter values, which replace each parameter's node (same object, new values);
- the optimizer's state (momentum buffers, Adam's moments);
- the gradients, so ``p.grad`` can be read afterwards at no cost;
- the tensors ``backward()`` was called on since the previous step (vkml/autograd.py), so
  ``loss.item()`` after ``step()`` costs no submission of its own.

By default ``backward()`` has already submitted the forward and the gradients
(``VKML_BACKWARD_RUNS``, vkml/autograd.py), so the step's submission holds the update alone,
built while the device computes the gradients; with ``VKML_BACKWARD_RUNS=lazy`` forward,
backward and update of a training step run together in this one submission.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import autograd
from ..realize import realize


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
        from ..creation import zeros_like

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

    def update(self, param, grad, state: dict, group: dict):
        """The parameter's new value (a lazy tensor); updates ``state`` in place with lazy tensors."""
        raise NotImplementedError

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join(lines + [")"])
