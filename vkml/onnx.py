"""``torch.onnx``: vkml cannot export ONNX graphs (it has no tracer), and says so by name.

Model code asks ``torch.onnx.is_in_onnx_export()`` to pick an export-friendly path: under vkml no export
is ever running, so it is False. ``export`` and ``dynamo_export`` raise NotImplementedError rather than
leave a program believing it wrote a file: load the ``state_dict`` into PyTorch and export there.

>>> import vkml
>>> vkml.onnx.is_in_onnx_export()
False
"""

from __future__ import annotations

__all__ = ["dynamo_export", "export", "is_in_onnx_export"]


def is_in_onnx_export() -> bool:
    """Whether an ONNX export is tracing the model now: never, under vkml."""
    return False


def _refuse(name: str):
    raise NotImplementedError(
        f"torch.onnx.{name}: vkml cannot export ONNX graphs (it has no tracer); save the state_dict with "
        "vkml.save, load it into the same model under PyTorch and export there"
    )


def export(model, args=(), f=None, *more, **options):
    """Refused: raises NotImplementedError (see the module's docstring)."""
    _refuse("export")


def dynamo_export(model, *args, **options):
    """Refused: raises NotImplementedError (see the module's docstring)."""
    _refuse("dynamo_export")
