"""``vkml.func``: PyTorch's ``torch.func`` function transforms — grad, grad_and_value, vjp, jacrev,
jacfwd, hessian, vmap and functional_call.

vkml has no batched tensors or forward-mode dual numbers; the transforms are built from what it
has, with PyTorch's signatures, results and errors:

- ``grad``, ``vjp``, ``jacrev``, ``jacfwd`` and ``hessian`` run the function on fresh inputs that
  require grad and differentiate with ``vkml.autograd.grad`` (``create_graph`` inside, so
  transforms nest: ``grad(grad(f))``); results leave the outermost transform detached. ``jacfwd``
  gives ``jacrev``'s values (the same Jacobian, computed in reverse mode).
- ``vmap`` calls the function once per index of the mapped dims and stacks the results, which is
  what a vectorized map means for a function without side effects; ``randomness`` is honoured:
  ``'error'`` (the default) raises at a random draw, ``'same'`` replays the default generator's
  state for every index, ``'different'`` draws afresh.
- ``functional_call`` swaps a module's parameters and buffers for the given tensors during one call.

Inputs may be tensors or pytrees of tensors (nested tuples, lists, dicts, named tuples, ...:
``vkml.utils._pytree``), as in PyTorch.

>>> import vkml
>>> from vkml.func import grad, vmap
>>> grad(lambda x: (x**3).sum())(vkml.tensor([1.0, 2.0])).tolist()
[3.0, 12.0]
>>> vmap(lambda row: row.sum())(vkml.tensor([[1.0, 2.0], [3.0, 4.0]])).tolist()
[3.0, 7.0]
"""

from __future__ import annotations

import contextlib
import functools
import threading

from . import autograd as engine
from . import pytree
from . import random as R
from .autograd_api import _tensor_class
from .autograd_api import grad as _grad
from .creation import zeros_like
from .shape import stack

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "vjp", "vmap"]

_state = threading.local()


def _depth() -> int:
    return getattr(_state, "depth", 0)


@contextlib.contextmanager
def _level():
    """One transform level: results are detached only when the outermost level ends."""
    _state.depth = _depth() + 1
    try:
        with engine.enable_grad():
            yield
    finally:
        _state.depth -= 1


# ---------------------------------------------------------------------- pytrees


# torch.func flattens with torch.utils._pytree; so does vkml.func (vkml/frontend/pytree.py): named tuples,
# OrderedDicts and registered containers are nodes, None a leaf
_flatten = pytree.tree_flatten
_unflatten = pytree.tree_unflatten


_map = pytree.tree_map


def _detach_all(tree):
    tensor = _tensor_class()
    return _map(lambda v: v.detach() if isinstance(v, tensor) else v, tree)


def _track(value):
    """A tensor the transform differentiates with respect to: a view of the caller's (which keeps an
    outer transform's graph) or a fresh leaf."""
    tensor = _tensor_class()
    if not isinstance(value, tensor):
        return value
    if not value.dtype.is_float:
        raise RuntimeError(
            f"only Tensors of floating point dtype can require gradients, got an input of dtype {value.dtype.name}"
        )
    return value.view_as(value) if value.requires_grad else value.detach().requires_grad_(True)


def _argnums(api: str, argnums, count: int) -> tuple[int, ...]:
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    if not nums:
        raise RuntimeError(f"{api}: argnums must be non-empty")
    for n in nums:
        if not isinstance(n, int) or isinstance(n, bool):
            raise RuntimeError(f"{api}: argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        if not -count <= n < count:
            raise RuntimeError(f"Got argnums={n}, but only {count} positional inputs")
    normalized = tuple(n % count for n in nums)
    if len(set(normalized)) != len(normalized):
        raise RuntimeError(f"{api}: argnums must be unique, got {argnums}")
    return normalized


def _prepare_args(api: str, args: tuple, argnums):
    nums = _argnums(api, argnums, len(args))
    args = list(args)
    for n in nums:
        args[n] = _map(_track, args[n])
    diff = args[argnums % len(args)] if isinstance(argnums, int) else tuple(args[n] for n in nums)
    return args, diff


def _split_aux(api: str, result, has_aux: bool):
    if not has_aux:
        return result, None
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(f"{api}(f, ...): output of function f should be a tuple: (output, aux) if has_aux is True")
    return result


def _gradients_of(output, diff):
    """d output / d leaves of ``diff``, in ``diff``'s structure; zeros where output does not depend."""
    leaves, spec = _flatten(diff)
    tensor = _tensor_class()
    tracked = [leaf for leaf in leaves if isinstance(leaf, tensor)]
    found = (
        _grad([output], tracked, create_graph=True, allow_unused=True)
        if output.requires_grad
        else (None,) * len(tracked)
    )
    grads, it = [], iter(found)
    for leaf in leaves:
        if isinstance(leaf, tensor):
            g = next(it)
            grads.append(zeros_like(leaf) if g is None else g)
        else:
            grads.append(leaf)
    return _unflatten(grads, spec)


# ---------------------------------------------------------------------- grad, vjp, Jacobians


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """A function returning (the gradient of scalar ``func`` with respect to ``args[argnums]``, its value).

    >>> import vkml
    >>> g, v = vkml.func.grad_and_value(lambda x: (x * x).sum())(vkml.tensor([3.0]))
    >>> g.tolist(), v.item()
    ([6.0], 9.0)
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with _level():
            args, diff = _prepare_args("grad_and_value", args, argnums)
            output, aux = _split_aux("grad_and_value", func(*args, **kwargs), has_aux)
            if not isinstance(output, _tensor_class()):
                raise RuntimeError(
                    f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(output)}"
                )
            if output.ndim != 0:
                raise RuntimeError(
                    f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with "
                    f"{output.ndim} dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
                )
            grads = _gradients_of(output, diff)
        if _depth() == 0:
            grads, output, aux = _detach_all(grads), output.detach(), _detach_all(aux)
        return (grads, (output, aux)) if has_aux else (grads, output)

    return wrapper


def grad(func, argnums=0, has_aux: bool = False):
    """A function returning the gradient of scalar ``func`` with respect to ``args[argnums]`` (an int
    or a tuple of ints; each argument a tensor or a pytree of tensors), as ``torch.func.grad``.

    >>> import vkml
    >>> vkml.func.grad(lambda x, y: (x * y).sum(), argnums=(0, 1))(vkml.tensor([2.0]), vkml.tensor([5.0]))
    (tensor([5.]), tensor([2.]))
    """
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grads, value = inner(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper


def vjp(func, *primals, has_aux: bool = False):
    """(func(*primals), vjp_fn[, aux]) as ``torch.func.vjp``: ``vjp_fn(cotangents)`` gives one
    gradient per primal, as a tuple.

    >>> import vkml
    >>> out, vjp_fn = vkml.func.vjp(lambda x: x * 2, vkml.tensor([1.0, 2.0]))
    >>> vjp_fn(vkml.tensor([1.0, 1.0]))[0].tolist()
    [2.0, 2.0]
    """
    with _level():
        tracked = [_map(_track, p) for p in primals]
        result = func(*tracked)
        output, aux = _split_aux("vjp", result, has_aux)
    out_leaves, out_spec = _flatten(output)
    tensor = _tensor_class()
    for leaf in out_leaves:
        if not isinstance(leaf, tensor):
            raise RuntimeError(
                f"vjp(f, *primals): Expected f to be a function that has Tensor outputs, got {type(leaf)}"
            )
    outer = _depth() == 0

    def vjp_fn(cotangents, *, retain_graph: bool = True, create_graph: bool | None = None):
        co_leaves, co_spec = _flatten(cotangents)
        if len(co_leaves) != len(out_leaves):
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of outputs to the "
                f"function. cotangents: {len(co_leaves)} tensors, primal output: {len(out_leaves)} tensors"
            )
        for co, out in zip(co_leaves, out_leaves):
            if tuple(co.shape) != tuple(out.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[0] has a shape of {tuple(co.shape)} and output[0] has a shape "
                    f"of {tuple(out.shape)}."
                )
        with _level():
            flat_primals, primal_spec = _flatten(tuple(tracked))
            targets = [p for p in flat_primals if isinstance(p, tensor)]
            pairs = [(o, c) for o, c in zip(out_leaves, co_leaves) if o.requires_grad]
            found = (
                _grad(
                    [o for o, _ in pairs],
                    targets,
                    [c for _, c in pairs],
                    retain_graph=retain_graph,
                    create_graph=True,
                    allow_unused=True,
                )
                if pairs
                else (None,) * len(targets)
            )
            it = iter(found)
            grads = []
            for p in flat_primals:
                if isinstance(p, tensor):
                    g = next(it)
                    grads.append(zeros_like(p) if g is None else g)
                else:
                    grads.append(p)
            result = _unflatten(grads, primal_spec)
        return _detach_all(result) if _depth() == 0 else result

    output = _detach_all(output) if outer else output
    if has_aux:
        return output, vjp_fn, (_detach_all(aux) if outer else aux)
    return output, vjp_fn


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size=None, _preallocate_and_copy: bool = False):
    """A function returning the Jacobian of ``func`` with respect to ``args[argnums]`` (reverse mode),
    as ``torch.func.jacrev``: shape ``output.shape + input.shape`` per (output, input) pair.

    >>> import vkml
    >>> vkml.func.jacrev(lambda x: x.sin())(vkml.tensor([0.0, 0.0])).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with _level():
            args, diff = _prepare_args("jacrev", args, argnums)
            output, aux = _split_aux("jacrev", func(*args, **kwargs), has_aux)
            out_leaves, out_spec = _flatten(output)
            in_leaves, in_spec = _flatten(diff)
            tensor = _tensor_class()
            per_output = []
            for out in out_leaves:
                if not isinstance(out, tensor):
                    raise RuntimeError(
                        f"jacrev(f, ...)(*args): Expected f to be a function that has Tensor outputs, got {type(out)}"
                    )
                rows: list[list] = [[] for _ in in_leaves]
                flat = out.reshape(-1)
                for j in range(out.numel()):
                    found = (
                        _grad([flat[j]], in_leaves, create_graph=True, allow_unused=True, retain_graph=True)
                        if out.requires_grad
                        else (None,) * len(in_leaves)
                    )
                    for k, (g, inp) in enumerate(zip(found, in_leaves)):
                        rows[k].append(zeros_like(inp) if g is None else g)
                blocks = []
                for k, inp in enumerate(in_leaves):
                    shape = tuple(out.shape) + tuple(inp.shape)
                    blocks.append(
                        stack(rows[k], 0).reshape(shape) if rows[k] else zeros_like(inp).reshape(-1)[:0].reshape(shape)
                    )
                per_output.append(_unflatten(blocks, in_spec))
            jac = _unflatten(per_output, out_spec)
        if _depth() == 0:
            jac, aux = _detach_all(jac), _detach_all(aux)
        return (jac, aux) if has_aux else jac

    return wrapper


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """``torch.func.jacfwd``: the Jacobian, the same values as ``jacrev`` (vkml has no forward mode;
    computed in reverse mode). ``randomness`` is accepted as PyTorch's.

    >>> import vkml
    >>> vkml.func.jacfwd(lambda x: 3 * x)(vkml.tensor([1.0, 1.0])).tolist()
    [[3.0, 0.0], [0.0, 3.0]]
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    return jacrev(func, argnums, has_aux=has_aux)


def hessian(func, argnums=0):
    """``torch.func.hessian``: the Jacobian of the Jacobian of ``func`` with respect to ``args[argnums]``.

    >>> import vkml
    >>> vkml.func.hessian(lambda x: (x**3).sum())(vkml.tensor([1.0, 2.0])).tolist()
    [[6.0, 0.0], [0.0, 12.0]]
    """
    return jacfwd(jacrev(func, argnums), argnums)


# ---------------------------------------------------------------------- vmap


@contextlib.contextmanager
def _randomness(mode: str):
    if mode == "error":
        previous = getattr(R._forbidden, "reason", None)
        R._forbidden.reason = (
            "vmap: called random operation while in randomness error mode. Please either use the 'same' or "
            "'different' randomness flags on vmap or perform the randomness operation out of vmap"
        )
        try:
            yield None
        finally:
            R._forbidden.reason = previous
    else:
        yield None


def _in_dims_tree(api: str, in_dims, args: tuple) -> list:
    """One in_dim (int or None) per leaf of ``args``."""
    if isinstance(in_dims, int) or in_dims is None:
        return [in_dims] * len(_flatten(args)[0])
    if not isinstance(in_dims, (tuple, list)):
        raise ValueError(
            f"{api}: Expected `in_dims` to be int or a (potentially nested) tuple matching the structure of inputs, "
            f"got: {type(in_dims)}."
        )
    if len(in_dims) != len(args):
        raise ValueError(
            f"{api}: in_dims is not compatible with the structure of `inputs`. in_dims has structure "
            f"{len(in_dims)} but inputs has structure {len(args)}."
        )
    dims = []
    for dim, arg in zip(in_dims, args):
        count = len(_flatten(arg)[0])
        if isinstance(dim, int) or dim is None:
            dims += [dim] * count
        else:
            sub = _flatten(dim)[0]
            if len(sub) != count:
                raise ValueError(f"{api}: in_dims is not compatible with the structure of `inputs`.")
            dims += sub
    return dims


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """``torch.func.vmap``: ``func`` mapped over dim ``in_dims`` of its inputs, results stacked at ``out_dims``.

    Runs ``func`` once per index (see the module's text); ``in_dims`` an int, None (not mapped) or
    a tuple per argument; ``out_dims`` an int or a tuple per output.

    >>> import vkml
    >>> x = vkml.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> vkml.vmap(vkml.dot)(x, x).tolist()
    [5.0, 25.0]
    >>> vkml.vmap(lambda a, b: a * b, in_dims=(0, None))(x, vkml.tensor([10.0, 1.0])).tolist()
    [[10.0, 2.0], [30.0, 4.0]]
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    name = getattr(func, "__name__", repr(func))

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        api = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
        leaves, spec = _flatten(args)
        dims = _in_dims_tree(api, in_dims, args)
        tensor = _tensor_class()
        size = None
        for leaf, dim in zip(leaves, dims):
            if dim is None:
                continue
            if not isinstance(leaf, tensor):
                raise ValueError(
                    f"{api}: Got in_dim={dim} for an input but the input is of type {type(leaf)}. We cannot vmap over "
                    "non-Tensor arguments, please use None as the respective in_dim"
                )
            if not -max(leaf.ndim, 1) <= dim < max(leaf.ndim, 1) or leaf.ndim == 0:
                raise ValueError(
                    f"{api}: Got in_dim={dim} for some input, but that input is a Tensor of dimensionality "
                    f"{leaf.ndim} so expected in_dim to satisfy -{leaf.ndim} <= in_dim < {leaf.ndim}."
                )
            n = leaf.shape[dim]
            if size is not None and n != size:
                sizes = [leaf.shape[d] for leaf, d in zip(leaves, dims) if d is not None]
                raise ValueError(
                    f"{api}: Expected all tensors to have the same size in the mapped dimension, got sizes {sizes} "
                    "for the mapped dimension"
                )
            size = n
        if size is None:
            raise ValueError(f"{api}: at least one input must be mapped over (got no tensors with an in_dim)")
        start_state = R.default_generator.get_state()
        results = []
        with _randomness(randomness):
            for i in range(size):
                if randomness == "same":
                    R.default_generator.set_state(start_state)
                sliced = [leaf if d is None else leaf.select(d, i) for leaf, d in zip(leaves, dims)]
                results.append(func(*_unflatten(sliced, spec), **kwargs))
        first_leaves, out_spec = _flatten(results[0]) if results else ([], None)
        outs = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(first_leaves)
        if isinstance(out_dims, (tuple, list)) and len(out_dims) != len(first_leaves):
            raise ValueError(
                f"{api}: out_dims is not compatible with the structure of `outputs`. out_dims has structure "
                f"{len(out_dims)} but outputs has structure {len(first_leaves)}."
            )
        stacked = []
        for k, leaf in enumerate(first_leaves):
            if not isinstance(leaf, tensor):
                raise ValueError(
                    f"{api}: `{name}` must only return Tensors, got type {type(leaf)}. Did you mean to set out_dims= to "
                    "None for output?"
                )
            column = [_flatten(r)[0][k] for r in results]
            dim = outs[k]
            if dim is None:
                stacked.append(column[0])
                continue
            if not -(leaf.ndim + 1) <= dim <= leaf.ndim:
                raise ValueError(
                    f"{api}: Got out_dim={dim} for an output, but that output is a Tensor of dimensionality "
                    f"{leaf.ndim} so expected out_dim to satisfy -{leaf.ndim + 1} <= out_dim < {leaf.ndim + 1}."
                )
            stacked.append(stack(column, dim))
        return _unflatten(stacked, out_spec)

    return wrapper


# ---------------------------------------------------------------------- functional_call


def functional_call(
    module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights: bool = True, strict: bool = False
):
    """``module(*args, **kwargs)`` with its parameters and buffers replaced by the tensors in
    ``parameter_and_buffer_dicts`` (a dict by dotted name, or a tuple of dicts) for this one call,
    as ``torch.func.functional_call``; names not given keep the module's own tensors.

    >>> import vkml, vkml.nn as nn
    >>> layer = nn.Linear(2, 1, bias=False)
    >>> vkml.func.functional_call(layer, {"weight": vkml.tensor([[1.0, 1.0]])}, (vkml.tensor([2.0, 3.0]),)).tolist()
    [5.0]
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        replacements = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, (tuple, list)):
        replacements = {}
        for d in parameter_and_buffer_dicts:
            if not isinstance(d, dict):
                raise ValueError(
                    f"Expected all elements of parameter_and_buffer_dicts to be dictionaries, got {type(d)}"
                )
            repeated = set(replacements) & set(d)
            if repeated:
                raise ValueError(
                    f"{sorted(repeated)} appeared in multiple dictionaries; behavior of functional call is ambiguous"
                )
            replacements.update(d)
    else:
        raise ValueError(
            f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got {type(parameter_and_buffer_dicts)}"
        )
    known = {name for name, _ in module.named_parameters(remove_duplicate=False)} | {
        name for name, _ in module.named_buffers(remove_duplicate=False)
    }
    if strict:
        missing = sorted(known - set(replacements))
        unexpected = sorted(set(replacements) - known)
        if missing or unexpected:
            parts = []
            if unexpected:
                parts.append("Unexpected key(s): " + ", ".join(repr(k) for k in unexpected) + ".")
            if missing:
                parts.append("Missing key(s): " + ", ".join(repr(k) for k in missing) + ".")
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t" + "\n\t".join(parts))
    if tie_weights:  # a tensor shared under several names is replaced under all of them
        by_tensor: dict[int, list[str]] = {}
        for name, value in list(module.named_parameters(remove_duplicate=False)) + list(
            module.named_buffers(remove_duplicate=False)
        ):
            by_tensor.setdefault(id(value), []).append(name)
        for names in by_tensor.values():
            given = [n for n in names if n in replacements]
            if given:
                for n in names:
                    replacements.setdefault(n, replacements[given[0]])
    saved = []
    try:
        for name, value in replacements.items():
            owner, _, attr = name.rpartition(".")
            target = module.get_submodule(owner) if owner else module
            table = None
            for registry in ("_parameters", "_buffers"):
                entries = getattr(target, registry, None)
                if entries is not None and attr in entries:
                    table = entries
                    break
            if table is None:
                saved.append((target, attr, None, target.__dict__.get(attr, _MISSING)))
                object.__setattr__(target, attr, value)
            else:
                saved.append((target, attr, table, table[attr]))
                table[attr] = value
        args = () if args is None else args if isinstance(args, tuple) else (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for target, attr, table, old in reversed(saved):
            if table is not None:
                table[attr] = old
            elif old is _MISSING:
                target.__dict__.pop(attr, None)
            else:
                object.__setattr__(target, attr, old)


_MISSING = object()


# ---------------------------------------------------------------------- stack_module_state

__all__ += ["stack_module_state"]


def _stacked_leaf(tensors: tuple, name: str):
    """The tensors stacked; a new leaf that requires grad where every one of them does."""
    all_grad = all(t.requires_grad for t in tensors)
    if not all_grad and any(t.requires_grad for t in tensors):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = stack(tensors)
    return result.detach().requires_grad_() if all_grad else result


def stack_module_state(models) -> tuple[dict, dict]:
    """The parameters and the buffers of ``models`` (modules of one class, all in training or all in
    eval mode) stacked along a new first dim, as two dicts by dotted name, as
    ``torch.func.stack_module_state``: what ``vmap(functional_call)`` runs an ensemble with. The stacked
    parameters are new leaves (an optimizer can train them), unconnected to the models' own.

    >>> import vkml, vkml.nn as nn
    >>> models = [nn.Linear(3, 2) for _ in range(4)]
    >>> params, buffers = vkml.func.stack_module_state(models)
    >>> tuple(params["weight"].shape), params["weight"].is_leaf, buffers
    ((4, 2, 3), True, {})
    """
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    stacked = []
    for named in ("named_parameters", "named_buffers"):
        tables = [dict(getattr(model, named)()) for model in models]
        stacked.append({k: _stacked_leaf(tuple(table[k] for table in tables), k) for k in tables[0]})
    return stacked[0], stacked[1]


# ---------------------------------------------------------------------- jvp (forward mode, by the double backward trick)

__all__ += ["jvp"]


def _same_structure(a, b) -> bool:
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_same_structure(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) or isinstance(b, dict):
        return type(a) is type(b) and list(a) == list(b) and all(_same_structure(a[k], b[k]) for k in a)
    return True


def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """(func(*primals), the Jacobian-vector product J·tangents[, aux]) as ``torch.func.jvp``.

    vkml has no forward-mode dual numbers: J·t is the gradient, with respect to a dummy cotangent u,
    of tᵀ·(Jᵀ·u) (two reverse passes, the first recorded); J·t is linear in u's pass, so the values are
    the forward-mode ones. Outputs that do not depend on the primals get zero tangents.

    >>> import vkml
    >>> out, t = vkml.func.jvp(lambda x: x.sin() * x, (vkml.tensor([0.0, 1.0]),), (vkml.tensor([1.0, 0.0]),))
    >>> t.tolist()
    [0.0, 0.0]
    """
    if not isinstance(primals, tuple):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to call f(*primals)."
        )
    if not _same_structure(primals, tangents):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to have the same python structure. For "
            "example, if primals is a tuple of 3 tensors, tangents also must be."
        )
    tensor = _tensor_class()
    primal_leaves, tangent_leaves = _flatten(primals)[0], _flatten(tangents)[0]
    for p, t in zip(primal_leaves, tangent_leaves):
        if not (isinstance(p, tensor) and isinstance(t, tensor)):
            raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be only Tensors")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(
                "Trying to set a forward gradient that has a different size than that of the original Tensor, "
                f"this is not supported. Tensor is of size {list(p.shape)} while the given forward gradient is of "
                f"size {list(t.shape)}."
            )
    outer = _depth() == 0
    with _level():
        tracked = [_map(_track, p) for p in primals]
        output, aux = _split_aux("jvp", func(*tracked), has_aux)
        out_leaves, out_spec = _flatten(output)
        for leaf in out_leaves:
            if not isinstance(leaf, tensor):
                raise RuntimeError(
                    f"jvp(f, primals, tangents): expected f(*primals) to return only tensors, got unsupported type {type(leaf)}"
                )
        inputs = _flatten(tuple(tracked))[0]
        dummies = [zeros_like(o).requires_grad_(True) for o in out_leaves]
        live = [(o, u) for o, u in zip(out_leaves, dummies) if o.requires_grad]
        firsts = (
            _grad([o for o, _ in live], inputs, [u for _, u in live], create_graph=True, allow_unused=True)
            if live
            else (None,) * len(inputs)
        )
        pairs = [(g, t) for g, t in zip(firsts, tangent_leaves) if g is not None and g.requires_grad]
        seconds = (
            _grad(
                [g for g, _ in pairs], dummies, [t.to(g.dtype) for g, t in pairs], create_graph=True, allow_unused=True
            )
            if pairs
            else (None,) * len(dummies)
        )
        products = [zeros_like(o) if s is None else s for o, s in zip(out_leaves, seconds)]
    output, product = _unflatten(out_leaves, out_spec), _unflatten(products, out_spec)
    if outer:
        output, product, aux = _detach_all(output), _detach_all(product), _detach_all(aux)
    return (output, product, aux) if has_aux else (output, product)
