"""``vkml.autograd.functional``: PyTorch's ``torch.autograd.functional`` — vjp, jvp, jacobian, hessian, vhp, hvp.

Each is built on ``vkml.autograd.grad`` as PyTorch builds its own: reverse mode, with the
"double backward" trick for the forward-mode products (jvp, hvp), and a Jacobian as one backward
pass per output element (``vectorize=True`` is accepted and gives the same values the same way:
vkml has no batched gradients). The structure of what comes back follows PyTorch: a Tensor where
the user gave a Tensor, a tuple where a tuple; an output that does not depend on an input gives
zeros there, or raises RuntimeError with ``strict=True``. Without ``create_graph`` the results
are detached.

>>> import vkml
>>> from vkml.autograd.functional import jacobian, hessian
>>> x = vkml.tensor([1.0, 2.0])
>>> jacobian(lambda t: t**2, x).tolist()
[[2.0, 0.0], [0.0, 4.0]]
>>> hessian(lambda t: (t**3).sum(), x).tolist()
[[6.0, 0.0], [0.0, 12.0]]
"""

from __future__ import annotations

from . import autograd as engine
from .autograd_api import _tensor_class
from .autograd_api import grad as _grad
from .creation import zeros_like
from .shape import stack

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]

_STRATEGIES = ("forward-mode", "reverse-mode")
_STRATEGY_MESSAGE = (
    'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function has more outputs '
    'than inputs, "forward-mode" tends to be more performant. Otherwise, prefer to use "reverse-mode".'
)


def _as_tuple(value, what: str, api: str) -> tuple[bool, tuple]:
    """(whether ``value`` was a tuple or list, its tensors as a tuple); anything else raises TypeError."""
    is_tuple = isinstance(value, (tuple, list))
    values = tuple(value) if is_tuple else (value,)
    tensor = _tensor_class()
    for i, v in enumerate(values):
        if not isinstance(v, tensor):
            if is_tuple:
                raise TypeError(
                    f"The {what} given to {api} must be either a Tensor or a tuple of Tensors but the value at "
                    f"index {i} has type {type(v)}."
                )
            raise TypeError(
                f"The {what} given to {api} must be either a Tensor or a tuple of Tensors but the given {what} has type {type(v)}."
            )
    return is_tuple, values


def _unpack(values, is_tuple):
    """A tuple back as the user gave it: itself, or its one element; ``is_tuple`` a pair for nested results."""
    if isinstance(is_tuple, tuple):
        outer, inner = is_tuple
        if not inner:
            values = tuple(v[0] for v in values)
        return values if outer else values[0]
    return values if is_tuple else values[0]


def _prepare(tensors: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """Inputs the function sees: fresh leaves that require grad, or (create_graph, already requiring
    grad) views that keep the caller's graph, so that a higher derivative reaches through."""
    prepared = []
    for t in tensors:
        if create_graph and t.requires_grad:
            prepared.append(t.view_as(t))
        else:
            prepared.append(t.detach().requires_grad_(need_graph))
    return tuple(prepared)


def _finish(values, create_graph: bool):
    """Results as PyTorch hands them back: detached unless ``create_graph``."""
    if create_graph:
        return values
    if isinstance(values, tuple):
        return tuple(_finish(v, create_graph) for v in values)
    return values.detach()


def _check_v(v: tuple, like: tuple) -> None:
    if len(v) != len(like):
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got {len(v)}.")
    for i, (a, b) in enumerate(zip(v, like)):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"Entry {i} in v has invalid size: should be {list(b.shape)} but got {list(a.shape)}.")


_STRICT_MESSAGES = {
    "outputs": "Output {i} of the user-provided function does not require gradients. The outputs must be "
    "computed in a differentiable manner from the input when running in strict mode.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the user-provided "
    "function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided function with respect "
    "to input {i} is independent of the input. This is not allowed in strict mode. You should ensure that your "
    "function is twice differentiable and that the jacobian depends on the inputs (this would be violated by a "
    "linear function for example).",
    "hessian": "The hessian of the user-provided function with respect to input {i} is independent of the input. "
    "This is not allowed in strict mode. You should ensure that your function is thrice differentiable and that "
    "the hessian depends on the inputs.",
}


def _check_requires_grad(values: tuple, kind: str, strict: bool) -> None:
    if not strict:
        return
    for i, v in enumerate(values):
        if v is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This is not allowed in strict mode."
            )
        if not v.requires_grad:
            raise RuntimeError(_STRICT_MESSAGES[kind].format(i=i))


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when using "
    "the double backward trick to compute forward mode gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
    "strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the grad_jacobian. "
    "This is not allowed in strict mode as it prevents from using the double backward trick to replace forward mode AD.",
}


def _fill_zeros(grads: tuple, refs: tuple, strict: bool, create_graph: bool, stage: str) -> tuple:
    """Each missing gradient as zeros shaped like its reference (strict mode: an error instead)."""
    out = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. This is not allowed in "
                "strict mode when create_graph=True."
            )
        out.append(g)
    return tuple(out)


def _grads(outputs: tuple, inputs: tuple, grad_outputs=None, create_graph=False, retain_graph=None) -> tuple:
    """``autograd.grad`` over the outputs that require grad (None for an input none of them reaches)."""
    pairs = [
        (out, None if grad_outputs is None else grad_outputs[i])
        for i, out in enumerate(outputs)
        if out is not None and out.requires_grad
    ]
    if not pairs:
        return (None,) * len(inputs)
    outs = [o for o, _ in pairs]
    gouts = None if grad_outputs is None else [g for _, g in pairs]
    return _grad(outs, list(inputs), gouts, retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)


def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), the vector-Jacobian product vᵀ·J) as ``torch.autograd.functional.vjp``.

    >>> import vkml
    >>> out, g = vkml.autograd.functional.vjp(lambda x: x * 3, vkml.tensor([1.0, 2.0]), vkml.tensor([1.0, 1.0]))
    >>> g.tolist()
    [3.0, 3.0]
    """
    with engine.enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs = func(*inputs)
        outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _prepare(v, create_graph, need_graph=False)
            _check_v(v, outputs)
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the user-provided function returns a single Tensor with a single element."
            )
    with engine.set_grad_enabled(True if create_graph else engine.is_grad_enabled()):
        grads = _grads(outputs, inputs, v, create_graph=create_graph)
        product = _fill_zeros(grads, inputs, strict, create_graph, "back")
    return _unpack(_finish(outputs, create_graph), outputs_tuple), _unpack(_finish(product, create_graph), inputs_tuple)


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), the Jacobian-vector product J·v) as ``torch.autograd.functional.jvp``, by the
    double backward trick (the gradient of vᵀ·(Jᵀ·u) with respect to u).

    >>> import vkml
    >>> out, t = vkml.autograd.functional.jvp(lambda x: x**2, vkml.tensor([1.0, 2.0]), vkml.tensor([1.0, 1.0]))
    >>> t.tolist()
    [2.0, 4.0]
    """
    with engine.enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            v = _prepare(v, create_graph, need_graph=False)
            _check_v(v, inputs)
        elif len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the input to the user-provided function is a single Tensor with a single element."
            )
        outputs = func(*inputs)
        outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        dummies = tuple(zeros_like(out).requires_grad_(True) for out in outputs)
        grad_inputs = _grads(outputs, inputs, dummies, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with engine.set_grad_enabled(True if create_graph else engine.is_grad_enabled()):
        with engine.enable_grad() if create_graph else _nothing():
            grads = _grads(grad_inputs, dummies, v, create_graph=create_graph)
        product = _fill_zeros(grads, outputs, strict, create_graph, "back_trick")
    return _unpack(_finish(outputs, create_graph), outputs_tuple), _unpack(
        _finish(product, create_graph), outputs_tuple
    )


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def jacobian(
    func,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
):
    """The Jacobian of ``func`` at ``inputs``, as ``torch.autograd.functional.jacobian``.

    For one output and one input: a tensor of shape ``output.shape + input.shape``; tuples give
    a tuple (per output) of tuples (per input). Computed by one backward pass per output element.
    ``strategy="forward-mode"`` (which PyTorch allows with ``vectorize=True`` alone) gives the same
    values, computed the same way.

    >>> import vkml
    >>> vkml.autograd.functional.jacobian(lambda a, b: a * b, (vkml.tensor([1.0, 2.0]), vkml.tensor([3.0, 4.0])))[1].tolist()
    [[1.0, 0.0], [0.0, 2.0]]
    """
    if strategy not in _STRATEGIES:
        raise AssertionError(_STRATEGY_MESSAGE)  # PyTorch asserts
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                'torch.autograd.functional.jacobian does not support create_graph=True with strategy="forward-mode"'
            )
        if not vectorize:
            raise NotImplementedError(
                'torch.autograd.functional.jacobian: `strategy="forward-mode"` is only implemented when `vectorize=True`.'
            )
    with engine.enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs = func(*inputs)
        outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        result = []
        for i, out in enumerate(outputs):
            rows: list[list] = [[] for _ in inputs]
            flat = out.reshape(-1)
            for j in range(out.numel()):
                grads = _grads((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
                for k, (g, inp) in enumerate(zip(grads, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of input {k}. "
                                "This is not allowed in strict mode."
                            )
                        g = zeros_like(inp)
                    elif strict and create_graph and not g.requires_grad:
                        raise RuntimeError(
                            f"The jacobian of the user-provided function is independent of input {k}. This is not "
                            "allowed in strict mode when create_graph=True."
                        )
                    rows[k].append(g)
            per_input = []
            for k, inp in enumerate(inputs):
                shape = tuple(out.shape) + tuple(inp.shape)
                if rows[k]:
                    per_input.append(stack(rows[k], 0).reshape(shape))
                else:  # an empty output: an empty Jacobian
                    per_input.append(zeros_like(inp).reshape(-1)[:0].reshape(shape))
            result.append(tuple(per_input))
    return _unpack(_finish(tuple(result), create_graph), (outputs_tuple, inputs_tuple))


def hessian(
    func,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
):
    """The Hessian of a scalar ``func`` at ``inputs``, as ``torch.autograd.functional.hessian``:
    shape ``input.shape + input.shape``, or a tuple of tuples for several inputs.

    >>> import vkml
    >>> vkml.autograd.functional.hessian(lambda x: (x[0] * x[1]), vkml.tensor([1.0, 2.0])).tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    """
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in _STRATEGIES:
        raise AssertionError(_STRATEGY_MESSAGE)  # PyTorch asserts
    tensor = _tensor_class()

    def scalar(*values):
        out = func(*values)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        if out_tuple or not isinstance(out, tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def gradient(*values):
        jac = jacobian(scalar, values, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    result = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize)
    return _unpack(result, (inputs_tuple, inputs_tuple))


def _scalar_output(api: str, outputs_tuple: bool, outputs: tuple) -> None:
    if outputs_tuple or not isinstance(outputs[0], _tensor_class()):
        raise RuntimeError(f"The function given to {api} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {api} should contain a single element")


def _second_order_setup(api: str, func, inputs, v, create_graph: bool, strict: bool):
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", api)
    inputs = _prepare(inputs, create_graph, need_graph=True)
    if v is not None:
        _, v = _as_tuple(v, "v", api)
        v = _prepare(v, create_graph, need_graph=False)
        _check_v(v, inputs)
    elif len(inputs) != 1 or inputs[0].numel() != 1:
        raise RuntimeError(
            "The vector v can only be None if the input to the user-provided function is a single Tensor with a single element."
        )
    outputs = func(*inputs)
    outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", api)
    _check_requires_grad(outputs, "outputs", strict)
    _scalar_output(api, outputs_tuple, outputs)
    jac = _grads(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return inputs_tuple, inputs, v, outputs_tuple, outputs, jac


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), vᵀ·H) for a scalar ``func``, as ``torch.autograd.functional.vhp``.

    >>> import vkml
    >>> out, p = vkml.autograd.functional.vhp(lambda x: (x**3).sum(), vkml.tensor([1.0, 2.0]), vkml.tensor([1.0, 1.0]))
    >>> p.tolist()
    [6.0, 12.0]
    """
    with engine.enable_grad():
        inputs_tuple, inputs, v, outputs_tuple, outputs, jac = _second_order_setup(
            "vhp", func, inputs, v, create_graph, strict
        )
    with engine.set_grad_enabled(True if create_graph else engine.is_grad_enabled()):
        grads = _grads(jac, inputs, v, create_graph=create_graph)
        product = _fill_zeros(grads, inputs, strict, create_graph, "double_back")
    return _unpack(_finish(outputs, create_graph), outputs_tuple), _unpack(_finish(product, create_graph), inputs_tuple)


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), H·v) for a scalar ``func``, as ``torch.autograd.functional.hvp`` (the double
    backward trick: the gradient of (Hᵀ·u)·v with respect to u).

    >>> import vkml
    >>> out, p = vkml.autograd.functional.hvp(lambda x: (x**3).sum(), vkml.tensor([1.0, 2.0]), vkml.tensor([1.0, 0.0]))
    >>> p.tolist()
    [6.0, 0.0]
    """
    with engine.enable_grad():
        inputs_tuple, inputs, v, outputs_tuple, outputs, jac = _second_order_setup(
            "hvp", func, inputs, v, create_graph, strict
        )
        dummies = tuple(zeros_like(inp).requires_grad_(True) for inp in inputs)
        double_back = _grads(jac, inputs, dummies, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with engine.set_grad_enabled(True if create_graph else engine.is_grad_enabled()):
        grads = _grads(double_back, dummies, v, create_graph=create_graph)
        product = _fill_zeros(grads, inputs, strict, create_graph, "double_back_trick")
    return _unpack(_finish(outputs, create_graph), outputs_tuple), _unpack(_finish(product, create_graph), inputs_tuple)
