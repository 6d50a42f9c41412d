"""``vkml.autograd.gradcheck`` / ``gradgradcheck`` and the legacy ``Variable``, as in ``torch.autograd``.

gradcheck compares the Jacobian that backward computes with central finite differences of the
function, input element by input element; PyTorch's defaults (``eps`` 1e-6, ``atol`` 1e-5,
``rtol`` 1e-3) assume float64 inputs, which vkml's CPU backend (and devices with
shaderFloat64) has. Like PyTorch's, it warns when an input that requires grad is not float64.

>>> import vkml
>>> x = vkml.tensor([0.5, 1.5], dtype=vkml.float64, requires_grad=True)
>>> vkml.autograd.gradcheck(lambda t: (t * t).sum(), (x,))
True
"""

from __future__ import annotations

import warnings

import numpy as np

from ..tensor import Tensor
from . import autograd_api, forward_ad
from .creation import tensor
from .random import randn


class GradcheckError(RuntimeError):
    """gradcheck's failure, as ``torch.autograd.gradcheck.GradcheckError``."""


def _outputs(result) -> list:
    parts = result if isinstance(result, (tuple, list)) else (result,)
    return [p for p in parts if isinstance(p, Tensor)]


def _numerical(func, inputs: tuple, index: int, eps: float, n_out: list) -> list[np.ndarray]:
    """d(outputs)/d(inputs[index]) by central differences: one (numel(out), numel(in)) array per output."""
    x = inputs[index]
    base = x.detach().numpy().astype(np.float64).reshape(-1)
    columns = [np.zeros((n, base.size)) for n in n_out]
    for j in range(base.size):
        values = []
        for step in (eps, -eps):
            moved = base.copy()
            moved[j] += step
            probe = _like(x, moved)
            args = list(inputs)
            args[index] = probe
            # grad mode stays on: ``func`` may differentiate itself (gradgradcheck's first gradients)
            values.append([o.detach().numpy().astype(np.float64).reshape(-1) for o in _outputs(func(*args))])
        for k, (plus, minus) in enumerate(zip(*values, strict=True)):
            columns[k][:, j] = (plus - minus) / (2 * eps)
    return columns


def _like(x, flat: np.ndarray):
    return tensor(flat.reshape(x.shape).astype(x.dtype.value_np), device=x.device, requires_grad=x.requires_grad)


def _analytical(func, inputs: tuple, differentiable: list[int]) -> tuple[list, list[list[np.ndarray]]]:
    """Per output k and differentiable input i, the (numel(out), numel(in)) Jacobian from backward."""
    outputs = _outputs(func(*inputs))
    jacobians = []
    for out in outputs:
        n = int(np.prod(out.shape))
        per_input = [np.zeros((n, int(np.prod(inputs[i].shape)))) for i in differentiable]
        if out.requires_grad:
            flat = out.reshape(-1)
            for row in range(n):
                grads = autograd_api.grad(
                    flat[row], [inputs[i] for i in differentiable], retain_graph=True, allow_unused=True
                )
                for slot, g in enumerate(grads):
                    if g is not None:
                        per_input[slot][row] = g.numpy().astype(np.float64).reshape(-1)
        jacobians.append(per_input)
    return outputs, jacobians


def gradcheck(
    func,
    inputs,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked=None,
) -> bool:
    """Whether backward's gradients of ``func(*inputs)`` match finite differences (PyTorch's ``gradcheck``).

    Returns True, or raises ``GradcheckError`` naming the output and input whose Jacobians
    differ (False with ``raise_exception=False``). ``check_forward_ad`` also checks the Jacobian from
    forward-mode tangents (vkml.autograd.forward_ad: one dual pass per input element); batched checks
    are not available in vkml: asking for them raises NotImplementedError.
    """
    if check_batched_grad or check_batched_forward_grad:
        raise NotImplementedError("gradcheck: vkml has no batched gradients (vmap over the backward pass)")
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    differentiable = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not differentiable:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them have")
    for i in differentiable:
        if inputs[i].dtype.name != "float64":
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point. This check will likely "
                "fail if all the inputs are not of double precision floating point. ",
                UserWarning,
                stacklevel=2,
            )
    if not (check_backward_ad or check_forward_ad):
        return True
    sizes = [int(np.prod(o.shape)) for o in _outputs(func(*inputs))]
    modes = []
    if check_backward_ad:
        modes.append(("", _analytical(func, inputs, differentiable)[1]))
    if check_forward_ad:
        modes.append(("computed with forward mode ", _forward_jacobians(func, inputs, differentiable, sizes)))
    for slot, i in enumerate(differentiable):
        numerical = _numerical(func, inputs, i, eps, sizes)
        for mode, analytical in modes:
            for k in range(len(sizes)):
                a, n = analytical[k][slot], numerical[k]
                if not np.allclose(a, n, rtol=rtol, atol=atol):
                    message = (
                        f"Jacobian {mode}mismatch for output {k} with respect to input {i},\n"
                        f"numerical:{n}\nanalytical:{a}\n"
                    )
                    if raise_exception:
                        raise GradcheckError(message)
                    return False
    return True


def _forward_jacobians(func, inputs: tuple, differentiable: list[int], sizes: list[int]) -> list[list[np.ndarray]]:
    """Per output k and differentiable input i, the (numel(out), numel(in)) Jacobian from forward-mode
    tangents: column j is every output's tangent for a one-hot tangent at element j of input i."""
    jacobians = [[np.zeros((n, int(np.prod(inputs[i].shape)))) for i in differentiable] for n in sizes]
    for slot, i in enumerate(differentiable):
        x = inputs[i]
        width = int(np.prod(x.shape))
        for j in range(width):
            basis = np.zeros(width)
            basis[j] = 1.0
            with forward_ad.dual_level():
                args = list(inputs)
                args[i] = forward_ad.make_dual(x.detach(), _like(x, basis).detach())
                for k, out in enumerate(_outputs(func(*args))):
                    tangent = forward_ad.unpack_dual(out).tangent
                    if tangent is not None:
                        jacobians[k][slot][:, j] = tangent.detach().numpy().astype(np.float64).reshape(-1)
    return jacobians


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """gradcheck of the gradients of ``func`` (second derivatives), as PyTorch's ``gradgradcheck``.

    ``grad_outputs`` default to random float64 values from vkml's generator (PyTorch's come
    from its own); they take part in the check as constants.
    """
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    differentiable = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    outputs = _outputs(func(*inputs))
    if grad_outputs is None:
        grad_outputs = [randn(o.shape, dtype=o.dtype, device=o.device) for o in outputs]
    else:
        grad_outputs = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)

    def first_gradients(*args):
        outs = _outputs(func(*args))
        wrt = [args[i] for i in differentiable]
        grads = autograd_api.grad(outs, wrt, grad_outputs, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_gradients, inputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception)


class _VariableMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    """PyTorch's deprecated ``Variable(data, requires_grad=False)``: the tensor itself, detached, with
    ``requires_grad`` as asked; ``isinstance(t, Variable)`` holds for every tensor, as in PyTorch."""

    def __new__(cls, data, requires_grad: bool = False, volatile: bool = False):
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with vkml.no_grad():` instead.", UserWarning, 2
            )
        out = data.detach()
        return out.requires_grad_(requires_grad) if requires_grad else out
