"""``torch.ao.quantization`` (and its old name ``torch.quantization``): vkml has no quantized tensors or
int8 kernels, so every call that would quantize a model raises NotImplementedError naming itself, never
a silent no-op that leaves the model in float32 (docs/interop.md).

What a float model holds before it is converted works as in PyTorch: ``QuantStub`` and ``DeQuantStub``
pass their input through (PyTorch's do until ``convert`` swaps them), so a model written for eager-mode
quantization trains and evaluates in float; ``quantize_dynamic``, ``prepare``, ``convert``,
``fuse_modules``, the qconfig getters and the rest raise.

>>> import vkml
>>> from vkml.ao.quantization import QuantStub, quantize_dynamic
>>> QuantStub()(vkml.ones(2)).tolist()
[1.0, 1.0]
>>> quantize_dynamic(vkml.nn.Linear(2, 2))
Traceback (most recent call last):
...
NotImplementedError: torch.ao.quantization.quantize_dynamic: vkml cannot quantize (it has no quantized tensors or int8 kernels); keep the float model, or quantize it with PyTorch from its state_dict
"""

from __future__ import annotations

from ..nn.module import Module

__all__ = [
    "DeQuantStub",
    "QuantStub",
    "QuantWrapper",
    "convert",
    "fuse_modules",
    "fuse_modules_qat",
    "get_default_qat_qconfig",
    "get_default_qconfig",
    "get_default_qconfig_mapping",
    "prepare",
    "prepare_qat",
    "quantize",
    "quantize_dynamic",
    "quantize_qat",
]


class QuantStub(Module):
    """Where a quantized model's input would be quantized: the identity in a float model (PyTorch's, before
    ``convert``)."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig is not None:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class DeQuantStub(Module):
    """Where a quantized model's output would be dequantized: the identity in a float model."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig is not None:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class QuantWrapper(Module):
    """``module`` between a ``QuantStub`` and a ``DeQuantStub``, as PyTorch's wrapper puts it."""

    def __init__(self, module):
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.add_module("quant", QuantStub(qconfig))
        self.add_module("dequant", DeQuantStub(qconfig))
        self.add_module("module", module)
        self.train(module.training)

    def forward(self, x):
        return self.dequant(self.module(self.quant(x)))


def _cannot_quantize(name: str):
    def refuse(*args, **kwargs):
        raise NotImplementedError(
            f"torch.ao.quantization.{name}: vkml cannot quantize (it has no quantized tensors or int8 kernels); "
            "keep the float model, or quantize it with PyTorch from its state_dict"
        )

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"``torch.ao.quantization.{name}``: raises NotImplementedError (vkml cannot quantize)."
    return refuse


quantize_dynamic = _cannot_quantize("quantize_dynamic")
quantize = _cannot_quantize("quantize")
quantize_qat = _cannot_quantize("quantize_qat")
prepare = _cannot_quantize("prepare")
prepare_qat = _cannot_quantize("prepare_qat")
convert = _cannot_quantize("convert")
fuse_modules = _cannot_quantize("fuse_modules")
fuse_modules_qat = _cannot_quantize("fuse_modules_qat")
get_default_qconfig = _cannot_quantize("get_default_qconfig")
get_default_qat_qconfig = _cannot_quantize("get_default_qat_qconfig")
get_default_qconfig_mapping = _cannot_quantize("get_default_qconfig_mapping")
