"""``torch.jit``'s TorchScript names on ``vkml.jit``: programs that script or trace a model run unchanged.

vkml has no TorchScript: a model runs as the Python it is, and fusion needs no compiler (every graph is
lazy and fused at realize). So ``vkml.jit.script(m)`` and ``vkml.jit.trace(m, inputs)`` return ``m``
itself, which computes what the scripted or traced model would (a trace freezes the Python control
flow of its example; ``m`` keeps it live: the same results wherever the trace was valid); the
decorators (``ignore``, ``unused``, ``export``, ``script_method``, ``interface``) return their function;
``is_scripting()`` and ``is_tracing()`` are False. ``jit.save(m, f)`` writes the module object itself
(pickled by ``vkml.save``, as ``torch.save(model)`` writes one) and ``jit.load`` reads it back, so a
program that exports its scripted model and loads it runs end to end; the file is no TorchScript
archive (PyTorch cannot load it, nor vkml one of PyTorch's), and ``.code`` / ``.graph`` do not exist.
``vkml.jit`` itself stays vkml's capture-and-replay decorator (docs/jit.md).

>>> import vkml
>>> model = vkml.nn.Linear(2, 2)
>>> vkml.jit.script(model) is model, vkml.jit.is_scripting()
(True, False)
"""

from __future__ import annotations

import typing

from ..frontend import serialization
from ..frontend.jit import jit as _jit
from .module import Module

__all__ = [
    "Attribute",
    "Final",
    "ScriptFunction",
    "ScriptModule",
    "annotate",
    "enable_onednn_fusion",
    "export",
    "fork",
    "freeze",
    "ignore",
    "interface",
    "is_scripting",
    "is_tracing",
    "load",
    "optimize_for_inference",
    "save",
    "script",
    "script_if_tracing",
    "script_method",
    "set_fusion_strategy",
    "trace",
    "trace_module",
    "unused",
    "wait",
]

Final = typing.Final


class ScriptModule(Module):
    """``torch.jit.ScriptModule``: a plain ``vkml.nn.Module`` (old-style scripted classes subclass it)."""

    def save(self, f, _extra_files=None) -> None:
        """``ScriptModule.save``: ``vkml.jit.save(self, f)``."""
        save(self, f, _extra_files)


class ScriptFunction:
    """``torch.jit.ScriptFunction``, for ``isinstance`` checks: ``script`` never makes one (it returns the function)."""


def script(obj, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """``torch.jit.script``: ``obj`` itself (a module, function or class), which computes what its script would."""
    return obj


def trace(func, example_inputs=None, optimize=None, check_trace: bool = True, check_inputs=None, **kwargs):
    """``torch.jit.trace``: ``func`` itself. Its Python control flow stays live, where a trace would freeze
    the example's: the same results for every input the trace was valid for."""
    if not callable(func):
        raise RuntimeError(f"trace: expected a callable (a function or module), got {type(func).__name__}")
    return func


def trace_module(mod, inputs, optimize=None, check_trace: bool = True, check_inputs=None, **kwargs):
    """``torch.jit.trace_module``: the module itself (see ``trace``)."""
    if not isinstance(mod, Module):
        raise AttributeError("expected torch.nn.Module as the first argument")
    if not isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    return mod


def script_if_tracing(fn):
    return fn


def ignore(drop=False, **kwargs):
    """``@torch.jit.ignore`` and ``@torch.jit.ignore(drop=True)``: the function, unchanged."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    return fn


def export(fn):
    return fn


def script_method(fn):
    return fn


def interface(obj):
    return obj


def is_scripting() -> bool:
    """False: vkml runs Python, never TorchScript (models branch on it to stay scriptable)."""
    return False


def is_tracing() -> bool:
    return False


def annotate(the_type, the_value):
    """``torch.jit.annotate``: ``the_value`` (the type is TorchScript's hint)."""
    return the_value


class Attribute(typing.NamedTuple):
    """``torch.jit.Attribute(value, type)``: the named tuple PyTorch's is outside a scripted class."""

    value: typing.Any
    type: typing.Any


def freeze(mod, preserved_attrs=None, optimize_numerics: bool = True):
    """``torch.jit.freeze``: the module itself, in eval mode as PyTorch requires."""
    if mod.training:
        raise RuntimeError(
            "Freezing is currently only implemented for modules in eval mode. Please call .eval() on your module "
            "before freezing."
        )
    return mod


def optimize_for_inference(mod, other_methods=None):
    """``torch.jit.optimize_for_inference``: the module in eval mode (vkml fuses every graph already)."""
    return mod.eval()


class _Future:
    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value

    def done(self) -> bool:
        return True


def fork(func, *args, **kwargs):
    """``torch.jit.fork``: runs ``func`` now (vkml's work is asynchronous on the device anyway); ``wait`` returns its result."""
    return _Future(func(*args, **kwargs))


def wait(future):
    return future.wait()


_ARCHIVE_KEY = "vkml.jit.save"  # marks a file jit.save wrote, so jit.load refuses other checkpoints


def save(m, f, _extra_files=None) -> None:
    """``torch.jit.save``: the module ``m`` (what ``script`` or ``trace`` returned), written whole by
    ``vkml.save``; ``vkml.jit.load`` gives it back. Its class must be importable where it is loaded, as
    for ``torch.save(model)``. The file is vkml's, not a TorchScript archive.

    >>> import io, vkml
    >>> buffer = io.BytesIO()
    >>> vkml.jit.save(vkml.jit.script(vkml.nn.Linear(2, 1)), buffer); _ = buffer.seek(0)
    >>> type(vkml.jit.load(buffer)).__name__
    'Linear'
    """
    if not isinstance(m, Module):
        raise AttributeError(f"'{type(m).__name__}' object has no attribute 'save'")
    # PyTorch's archive keeps each extra file as bytes, and jit.load gives bytes back
    extra = {
        name: content.encode() if isinstance(content, str) else bytes(content)
        for name, content in (_extra_files or {}).items()
    }
    serialization.save({_ARCHIVE_KEY: 1, "module": m, "extra_files": extra}, f)


def load(f, map_location=None, _extra_files=None):
    """``torch.jit.load``: the module ``vkml.jit.save`` wrote (on ``map_location``'s device when given);
    ``_extra_files``' names are filled in from the file, as PyTorch's."""
    try:
        archive = serialization.load(f, map_location=map_location, weights_only=False)
    except Exception as error:
        raise RuntimeError(
            f"vkml.jit.load: cannot read {f!r} ({error}); vkml reads the modules vkml.jit.save wrote, not "
            "PyTorch's TorchScript archives (load its state_dict into the model's class instead)"
        ) from error
    if not isinstance(archive, dict) or not archive.get(_ARCHIVE_KEY):
        raise RuntimeError(
            "vkml.jit.load: the file holds no module vkml.jit.save wrote (for a checkpoint, use vkml.load)"
        )
    if _extra_files is not None:
        for name in _extra_files:
            _extra_files[name] = archive["extra_files"].get(name, b"")
    return archive["module"]


_fusion_strategy = [("STATIC", 2), ("DYNAMIC", 10)]


def set_fusion_strategy(strategy):
    """Accepted (TorchScript's fuser settings); returns the previous strategy, as PyTorch's."""
    global _fusion_strategy
    before, _fusion_strategy = _fusion_strategy, list(strategy)
    return before


def enable_onednn_fusion(enabled: bool) -> None:
    """Accepted (a TorchScript fuser switch); vkml's fusion does not depend on it."""


# vkml.jit is the capture-and-replay decorator (vkml/frontend/jit.py); torch.jit's names are its attributes.
for _name in __all__:
    _value = globals()[_name]
    setattr(_jit, _name, staticmethod(_value) if callable(_value) and not isinstance(_value, type) else _value)
del _name, _value
