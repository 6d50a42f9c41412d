"""``vkml.amp.GradScaler``: loss scaling for float16 training, with PyTorch's API, states and errors.

The scale and the growth tracker are host numbers (PyTorch keeps them in device tensors so that
``update`` needs no sync; its ``step`` reads ``found_inf`` back anyway, and so does vkml's, once per
step). The scale is kept in float32, as PyTorch's tensor is, so the factors round as they do there.

>>> import vkml
>>> w = vkml.nn.Parameter(vkml.ones(2))
>>> opt = vkml.optim.SGD([w], lr=0.5)
>>> scaler = vkml.amp.GradScaler("cpu", init_scale=1024.0)
>>> scaler.scale((w * w).sum()).backward()
>>> scaler.step(opt); scaler.update()
>>> w.tolist(), scaler.get_scale()
([0.0, 0.0], 1024.0)
"""

from __future__ import annotations

import enum
import math
from typing import Any

import numpy as np

import vkml

from ..ir import types as T
from ..tensor import Tensor
from . import autograd


class OptState(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf": None}


def _f32(x: float) -> float:
    return float(np.float32(x))


class GradScaler:
    """Scale the loss so float16 gradients do not underflow; unscale them before the optimizer step,
    skip the step when a gradient is inf or NaN, and adapt the scale (``update``).

    ``device`` is ``"cpu"`` or ``"vulkan"`` (default; ``"cuda"`` means it); ``enabled=False`` makes every method a
    pass-through, as in PyTorch.
    """

    def __init__(
        self,
        device: str = "vulkan",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        if device == "cuda":  # the Vulkan device type, as vkml.device("cuda") is a Vulkan device
            device = "vulkan"
        if device not in ("cpu", "vulkan"):
            raise RuntimeError(f"GradScaler: unsupported device '{device}' (vkml's device types: cpu, vulkan)")
        self._device = device
        self._enabled = enabled
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale = init_scale
        self._scale: float | None = None  # set by the first scale()
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._growth_tracker: int | None = None
        self._per_optimizer_states: dict[int, dict] = {}

    def _optimizer_state(self, optimizer) -> dict:
        return self._per_optimizer_states.setdefault(id(optimizer), _fresh_optimizer_state())

    def _check_scale(self, funcname: str) -> None:
        if self._scale is None:
            raise AssertionError(
                f"Attempted {funcname} but _scale is None.  This may indicate your script did not use "
                "scaler.scale(loss or outputs) earlier in the iteration."
            )

    def scale(self, outputs):
        """``outputs`` (a tensor, or an iterable of them) times the current scale."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale, self._growth_tracker = _f32(self._init_scale), self._init_growth_tracker
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)) or hasattr(outputs, "__iter__"):
            scaled = [self.scale(o) for o in outputs]
            return type(outputs)(scaled) if isinstance(outputs, (list, tuple)) else iter(scaled)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place, and note whether any is inf or NaN."""
        if not self._enabled:
            return
        self._check_scale("unscale_")
        state = self._optimizer_state(optimizer)
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = _f32(1.0 / self._scale)  # PyTorch: the reciprocal in float64, rounded to float32
        grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        if any(g.dtype is T.float16 for g in grads):  # checked first: an error leaves every gradient as it was
            raise ValueError("Attempting to unscale FP16 gradients.")
        flags = []
        with autograd.no_grad():
            for grad in grads:
                flags.append(grad.isfinite().logical_not().any())
                grad.mul_(inv_scale)
        state["found_inf"] = flags
        state["stage"] = OptState.UNSCALED

    def _found_inf(self, state: dict) -> bool:
        flags = state["found_inf"]
        if not flags:
            return False
        return bool(vkml.stack([f.to(vkml.float32) for f in flags]).sum().item())  # one read of all flags

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless ``unscale_`` did) and run ``optimizer.step()`` unless a gradient is inf or NaN;
        returns what the step returned, or None when it was skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale("step")
        state = self._optimizer_state(optimizer)
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        state["found_inf_value"] = self._found_inf(state)
        result = None if state["found_inf_value"] else optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return result

    def update(self, new_scale: float | None = None) -> None:
        """Set the scale for the next iteration: ``new_scale``, or the current one times ``backoff_factor``
        if a step saw inf or NaN, times ``growth_factor`` after ``growth_interval`` clean steps."""
        if not self._enabled:
            return
        self._check_scale("update")
        if new_scale is not None:
            value = new_scale.item() if hasattr(new_scale, "item") else new_scale
            self._scale = _f32(value)
        else:
            found = [
                s.get("found_inf_value", self._found_inf(s) if s["found_inf"] is not None else None)
                for s in self._per_optimizer_states.values()
                if s["found_inf"] is not None
            ]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            if any(found):
                self._scale = _f32(np.float32(self._scale) * np.float32(self._backoff_factor))
                self._growth_tracker = 0
            else:
                successful = self._growth_tracker + 1
                if successful == self._growth_interval:
                    grown = _f32(np.float32(self._scale) * np.float32(self._growth_factor))
                    if math.isfinite(grown):
                        self._scale = grown
                    successful = 0
                self._growth_tracker = successful
        self._per_optimizer_states = {}

    def get_scale(self) -> float:
        """The current scale (the initial one before the first ``scale()``; 1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """PyTorch's five entries (empty when disabled)."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._get_growth_tracker(),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler."
            )
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale = _f32(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker = state_dict["_growth_tracker"]
