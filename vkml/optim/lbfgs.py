"""L-BFGS, with the algorithm and stopping rules of ``torch.optim.LBFGS`` (and its strong Wolfe line search).

The direction and step bookkeeping (dot products, step lengths, curvature pairs) runs on the
host, as in PyTorch, whose loop also reads every scalar back: each iteration waits for the
device. Vectors (the flat gradient, the direction, the history) stay vkml tensors on the
parameters' device.
"""

from __future__ import annotations

import functools

import numpy as np

from ..frontend import autograd
from ..frontend.creation import zeros
from ..frontend.host_scalar import HostScalar, host_number
from ..frontend.operators import cat
from ..frontend.realize import realize
from ..ir import types as T
from .optimizer import Optimizer, check_args


def _f32(x: float) -> float:
    """A host scalar rounded as PyTorch's 0-d float32 tensor of it is."""
    return float(np.float32(x))


def _dot(a, b) -> float:
    return (a * b).sum().item()


def _cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None) -> float:
    """The minimizer of the cubic through (x1, f1, slope g1) and (x2, f2, slope g2), clipped to ``bounds``
    (default: between x1 and x2); the bounds' midpoint when the cubic has no minimum."""
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1 * d1 - g1 * g2
    if disc < 0:
        return (low + high) / 2.0
    d2 = disc**0.5
    if x1 <= x2:
        at = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        at = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(at, low), high)


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A step ``t`` along ``d`` meeting the strong Wolfe conditions (Nocedal & Wright, algorithms 3.5
    and 3.6, as PyTorch does it): bracket, then zoom with cubic interpolation.
    ``evaluate(t)`` gives (loss, flat gradient) at x + t d. Returns (loss, gradient, t, evaluations)."""
    d_norm = d.abs().max().item()
    f_new, g_new = evaluate(t)
    evals = 1
    gtd_new = _dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    ls_iter = 0
    bracket = bracket_f = bracket_g = bracket_gtd = None
    while ls_iter < max_ls:
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f, bracket_g, bracket_gtd = (
                [t_prev, t],
                [f_prev, f_new],
                [g_prev, g_new],
                [gtd_prev, gtd_new],
            )
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f, bracket_g, bracket_gtd = (
                [t_prev, t],
                [f_prev, f_new],
                [g_prev, g_new],
                [gtd_prev, gtd_new],
            )
            break
        # extrapolate: a cubic step between 1.01 t and 10 t
        bounds = (t + 0.01 * (t - t_prev), t * 10)
        t_prev, t = t, _cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds)
        f_prev, g_prev, gtd_prev = f_new, g_new, gtd_new
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]
        bracket_gtd = [gtd, gtd_new]

    # zoom: shrink the bracket until a point meets the conditions
    insufficient = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_minimum(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        top, bottom = max(bracket), min(bracket)
        eps = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < eps:  # too near an end: move it inside unless progress was fine
            if insufficient or t >= top or t <= bottom:
                t = top - eps if abs(t - top) < abs(t - bottom) else bottom + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
        if f_new > f + c1 * t * gtd or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = t, f_new, g_new, gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low] = t, f_new, g_new, gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals


class LBFGS(Optimizer):
    """Limited-memory BFGS: ``step(closure)`` runs up to ``max_iter`` iterations, each a quasi-Newton
    direction from the last ``history_size`` curvature pairs and a step of ``lr`` (the first one
    scaled by the gradient's L1 norm) or one found by ``line_search_fn="strong_wolfe"``.

    One parameter group only, as in PyTorch. The state holds PyTorch's keys (``d``, ``t``,
    ``old_dirs``, ``old_stps``, ``ro``, ``H_diag``, ``prev_flat_grad``, ``prev_loss``, ``al``,
    ``func_evals``, ``n_iter``) and types: ``ro``, ``al`` and ``H_diag`` 0-d tensors (``HostScalar``),
    ``t`` and ``prev_loss`` numbers.

    >>> import vkml
    >>> w = vkml.nn.Parameter(vkml.tensor([3.0, -2.0]))
    >>> opt = LBFGS([w], line_search_fn="strong_wolfe")
    >>> def closure():
    ...     opt.zero_grad()
    ...     loss = ((w - 1.0) ** 2).sum()
    ...     loss.backward()
    ...     return loss
    >>> _ = opt.step(closure)
    >>> [round(v, 4) for v in w.tolist()]
    [1.0, 1.0]
    """

    _float_state = ("t", "H_diag", "ro", "al", "prev_loss")
    _saved_tensor_state = ("H_diag", "ro", "al")  # PyTorch keeps t and prev_loss as numbers
    _host_scalar_state = ()  # no step counter: its own ``step`` keeps n_iter and func_evals as ints

    def __init__(
        self,
        params,
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ):
        check_args(lr=lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _flat_grad(self):
        return cat([self._flat_part(p) for p in self._params], 0)

    @staticmethod
    def _flat_part(p):
        if p.grad is None:
            return zeros(p.numel(), dtype=p.dtype, device=p.device)
        if p.grad.is_sparse:  # nn.Embedding(sparse=True): PyTorch's LBFGS takes it dense
            return p.grad.to_dense().reshape(-1)
        return p.grad.reshape(-1)

    def _add_direction(self, t: float, d) -> None:
        offset = 0
        for p in self._params:
            n = p.numel()
            p.node = (p + t * d[offset : offset + n].reshape(p.shape)).node
            offset += n
        realize(*self._params)  # else each parameter's graph grows by one update per evaluation

    def _directional_evaluate(self, closure, start: list, d, t: float):
        """(loss, flat gradient) at the parameters ``start`` + t d; the parameters go back to ``start``."""
        self._add_direction(t, d)
        loss = self._evaluate(closure)
        grad = self._flat_grad()
        for p, node in zip(self._params, start):
            p.node = node
        return loss, grad

    def _evaluate(self, closure) -> float:
        with autograd.enable_grad():
            return float(closure())

    def step(self, closure):
        """Run up to ``max_iter`` iterations; ``closure`` clears the gradients, computes the loss,
        calls ``backward()`` and returns the loss. Returns the loss of the first evaluation."""
        with autograd.no_grad():
            return self._step(closure)

    def _step(self, closure):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size, line_search_fn = group["history_size"], group["line_search_fn"]
        if line_search_fn not in (None, "strong_wolfe"):
            raise RuntimeError("only 'strong_wolfe' is supported")
        state = self.state.setdefault(self._params[0], {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with autograd.enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if flat_grad.abs().max().item() <= tolerance_grad:
            return orig_loss
        # PyTorch keeps these scalars as 0-d tensors of the parameters' dtype: float32 rounding for
        # float32 (and narrower) parameters, none for float64 ones (time_sequence_prediction's .double())
        rnd = float if flat_grad.dtype is T.float64 else _f32

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), _numbers(state.get("ro"))
        h_diag, prev_flat_grad, prev_loss = (
            _numbers(state.get("H_diag")),
            state.get("prev_flat_grad"),
            state.get("prev_loss"),
        )
        if "al" in state:
            state["al"] = _numbers(state["al"])
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro, h_diag = [], [], [], 1.0
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = rnd(_dot(y, s))
                if ys > 1e-10:  # keep the pair only where the curvature is positive
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0), old_stps.pop(0), ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(rnd(1.0 / ys))
                    h_diag = rnd(ys / _dot(y, y))
                # two-loop recursion: d = -H grad
                al = state.setdefault("al", [None] * history_size)
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = rnd(_dot(old_stps[i], q) * ro[i])
                    q = realize(q + (-al[i]) * old_dirs[i])  # one small kernel per pair, the same each time
                d = q * h_diag
                for i in range(len(old_dirs)):
                    be_i = rnd(_dot(old_dirs[i], d) * ro[i])
                    d = realize(d + rnd(al[i] - be_i) * old_stps[i])
                # Each direction is built from the history, which was built from the directions
                # before it: realized as it goes, the graphs stay one update deep instead of
                # growing (and compiling anew) with every iteration.
                realize(*old_dirs[-1:], *old_stps[-1:])
            prev_flat_grad, prev_loss = flat_grad, loss
            t = min(1.0, rnd(1.0 / flat_grad.abs().sum().item())) * lr if state["n_iter"] == 1 else lr
            gtd = rnd(_dot(flat_grad, d))
            if gtd > -tolerance_change:  # not a descent direction
                break

            evals = 0
            if line_search_fn is not None:
                start = [p.node for p in self._params]
                evaluate = functools.partial(self._directional_evaluate, closure, start, d)
                loss, flat_grad, t, evals = _strong_wolfe(
                    evaluate, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals
                )
                self._add_direction(t, d)
                opt_cond = flat_grad.abs().max().item() <= tolerance_grad
            else:
                self._add_direction(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    loss = self._evaluate(closure)
                    flat_grad = self._flat_grad()
                    opt_cond = flat_grad.abs().max().item() <= tolerance_grad
                    evals = 1
            current_evals += evals
            state["func_evals"] += evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if (d * t).abs().max().item() <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break

        # PyTorch keeps ro, al and H_diag as 0-d tensors of the parameters' dtype: HostScalars
        scalar = functools.partial(_scalars, dtype=T.float64 if flat_grad.dtype is T.float64 else T.float32)
        if "al" in state:
            state["al"] = scalar(state["al"])
        state.update(
            d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=scalar(ro), H_diag=scalar(h_diag),
            prev_flat_grad=prev_flat_grad, prev_loss=prev_loss,
        )  # fmt: skip
        return orig_loss


def _numbers(value):
    """A saved scalar, or a list of them (None kept), as the host numbers ``_step`` computes with."""
    if isinstance(value, list):
        return [None if v is None else host_number(v) for v in value]
    return None if value is None else host_number(value)


def _scalars(value, dtype):
    """``_numbers`` turned back into 0-d tensors, as PyTorch keeps them."""
    if isinstance(value, list):
        return [None if v is None else HostScalar(v, dtype) for v in value]
    return None if value is None else HostScalar(value, dtype)
