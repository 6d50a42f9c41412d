"""A table-driven sweep in the manner of the public op-test suites (tinygrad's test_ops, PyTorch's
OpInfo sample inputs): each case is one lambda run on torch and on vkml with the same inputs, and
vkml must give what torch gives.

What is compared, as those suites compare it:

- every output tensor (a tuple, a list or a named tuple is walked): the dtype and the shape
  exactly, the values with ``torch.testing.assert_close``'s default tolerances for the dtype (NaN
  equal to NaN, as the suites that feed inf/nan inputs ask);
- a Python number or bool output: equal (floats with the same tolerance);
- the gradients of ``sum(out * w)`` with respect to every float input that requires grad, for a
  fixed ``w``, when the output is a float tensor that requires grad on both sides;
- an input a case writes into (an in-place form, ``out=``, setitem): its values after the call;
- where torch raises, vkml must raise an instance of torch's exception class.

A case is ``(id, fn, specs)``: ``fn(m, *tensors)`` with ``m`` torch or vkml, ``specs`` the inputs
(``spec`` below). Tables live in tests/test_peer_sweep.py.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch

import vkml

# dtype letter -> (numpy dtype, torch/vkml dtype name)
_DTYPES = {
    "f": (np.float32, "float32"),
    "d": (np.float64, "float64"),
    "h": (np.float16, "float16"),
    "i": (np.int64, "int64"),
    "j": (np.int32, "int32"),
    "u": (np.uint8, "uint8"),
    "b": (np.bool_, "bool"),
}

_SPECIALS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e30, -1e-30, 3.0]


def _values(kind: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    letter = kind[0]
    mod = kind[1:]
    np_dtype = _DTYPES[letter][0]
    if letter == "b":
        return (rng.random(n) < 0.5).reshape(shape)
    if letter in "iju":
        lo, hi = (1, 6) if mod == "+" or letter == "u" else (-5, 6)
        return rng.integers(lo, hi, n).astype(np_dtype).reshape(shape)
    if mod == "s":
        v = np.array([_SPECIALS[k % len(_SPECIALS)] for k in range(n)])
    elif mod == "+":
        v = rng.uniform(0.25, 3.0, n)
    elif mod == "u":  # inside (-1, 1)
        v = rng.uniform(-0.9, 0.9, n)
    elif mod == "p":  # a probability, inside (0, 1)
        v = rng.uniform(0.05, 0.95, n)
    elif mod == "g":  # > 1
        v = rng.uniform(1.1, 4.0, n)
    else:
        v = rng.uniform(-2.0, 2.0, n)
        # keep values off the points where rounding or the derivative is ambiguous
        v = np.where(np.abs(v - np.round(v * 2) / 2) < 0.05, v + 0.13, v)
    return v.astype(np_dtype).reshape(shape)


def spec(text: str, seed: int = 0):
    """``"f2x3"`` a float32 2x3 tensor that requires grad, ``"f"`` a 0-d one, ``"f0x3"`` an empty one,
    ``"i2x3"`` int64, ``"f+2x3"`` positive, ``"fu"``/``"fp"``/``"fg"`` in (-1,1)/(0,1)/(1,4),
    ``"fs6"`` NaN/inf/zeros/huge/tiny, ``"F2x3"`` float32 without grad, ``"T3x2"`` the transpose of a
    3x2 float32 tensor (non-contiguous, 2x3, requires grad)."""
    grad = True
    transpose = False
    if text[0] == "F":
        grad, text = False, "f" + text[1:]
    if text[0] == "T":
        transpose, text = True, "f" + text[1:]
    letter = text[0]
    rest = text[1:]
    mod = ""
    while rest and not rest[0].isdigit():
        mod, rest = mod + rest[0], rest[1:]
    shape = tuple(int(s) for s in rest.split("x")) if rest else ()
    arr = _values(letter + mod, shape, seed)
    grad = grad and letter in "fdh"
    return (arr, grad, transpose)


def make_inputs(m, specs, device=None):
    out = []
    for k, s in enumerate(specs):
        if isinstance(s, list):  # a nested list: an index or target tensor, as m.tensor makes it
            out.append(m.tensor(s) if device is None else m.tensor(s, device=device))
            continue
        if not isinstance(s, str):
            out.append(s)  # a Python number passes as it is
            continue
        arr, grad, transpose = spec(s, seed=k)
        kw = {} if device is None else {"device": device}
        t = m.tensor(arr.copy(), **kw)
        if transpose:
            t = t.t()
        if grad:
            t = t.detach().requires_grad_(True) if transpose else t.requires_grad_(True)
        out.append(t)
    return out


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [y for x in out for y in _flat(x)]
    return [out]


def _is_tensor(m, x):
    return isinstance(x, m.Tensor)


def _to_torch(x):
    """A vkml tensor's values as a torch tensor of the same dtype (through numpy)."""
    return torch.from_numpy(np.array(x.detach().cpu().numpy(), copy=True))


def _dtype_name(t):
    return str(t.dtype).split(".")[-1]


def run(m, fn, specs, device=None, grad=True):
    """``(outputs, inputs-after, grads, exception)`` for one side."""
    inputs = make_inputs(m, specs, device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = fn(m, *inputs)
            flat = _flat(out)
            # a lazy library may check values when it computes them: reading counts as the call
            for o in flat:
                if _is_tensor(m, o):
                    o.detach().cpu().numpy()
        except Exception as e:  # noqa: BLE001 - the class is compared with torch's
            return None, None, None, e
        grads = None
        leaves = [t for t in inputs if _is_tensor(m, t) and t.requires_grad and t.is_leaf]
        diff = [
            o
            for o in flat
            if _is_tensor(m, o) and o.requires_grad and o.dtype in (m.float16, m.float32, m.float64) and o.numel()
        ]
        if grad and leaves and diff:
            loss = 0
            for o in diff:
                w = np.linspace(-1.0, 2.0, o.numel()).reshape(tuple(o.shape))
                loss = loss + (o * m.tensor(w, dtype=o.dtype, device=o.device)).sum()
            try:
                grads = m.autograd.grad(loss, leaves, allow_unused=True)
            except Exception as e:  # noqa: BLE001
                grads = e
        return flat, inputs, grads, None


def _close(got, want, what):
    if isinstance(want, torch.Tensor):
        assert isinstance(got, vkml.Tensor), f"{what}: {type(got).__name__}, torch gives a tensor"
        assert _dtype_name(got) == _dtype_name(want), f"{what}: dtype {got.dtype} vs torch {want.dtype}"
        assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {tuple(got.shape)} vs torch {tuple(want.shape)}"
        g = _to_torch(got)
        w = want.detach().cpu()
        if w.dtype == torch.bfloat16:
            w = w.float()
        torch.testing.assert_close(g, w, equal_nan=True, msg=lambda s: f"{what}: {s}")
    elif isinstance(want, (bool, int, float)) or want is None:
        if isinstance(want, float) and isinstance(got, float):
            assert got == want or (math.isnan(got) and math.isnan(want)) or math.isclose(got, want, rel_tol=1.3e-6)
        else:
            assert type(got) is type(want) and got == want, f"{what}: {got!r} vs torch {want!r}"
    elif isinstance(want, torch.Size):
        assert tuple(got) == tuple(want), f"{what}: {got} vs torch {want}"
    elif isinstance(want, torch.dtype):
        assert str(got).split(".")[-1] == str(want).split(".")[-1], f"{what}: {got} vs torch {want}"
    else:
        assert got == want, f"{what}: {got!r} vs torch {want!r}"


def check(name, fn, specs, device=None, grad=True):
    """Run one case on both sides and assert vkml matches torch."""
    w_out, w_in, w_grads, w_err = run(torch, fn, specs, grad=grad)
    g_out, g_in, g_grads, g_err = run(vkml, fn, specs, device, grad=grad)
    if w_err is not None:
        assert g_err is not None, f"{name}: torch raises {type(w_err).__name__}: {w_err}; vkml does not"
        assert isinstance(g_err, type(w_err)), (
            f"{name}: torch raises {type(w_err).__name__}, vkml {type(g_err).__name__}: {g_err}"
        )
        return
    if g_err is not None:
        raise AssertionError(f"{name}: vkml raises {type(g_err).__name__}: {g_err}") from g_err
    assert len(g_out) == len(w_out), f"{name}: {len(g_out)} outputs vs torch {len(w_out)}"
    for k, (g, w) in enumerate(zip(g_out, w_out, strict=True)):
        _close(g, w, f"{name} output {k}")
    for k, (g, w) in enumerate(zip(g_in, w_in, strict=True)):
        if isinstance(w, torch.Tensor):
            _close(g, w, f"{name} input {k} after the call")
    if isinstance(w_grads, Exception):
        if isinstance(w_grads, NotImplementedError) and "derivative" in str(w_grads):
            return  # an older PyTorch without this derivative (nextafter's came in 2.13): nothing to compare
        assert isinstance(g_grads, Exception), f"{name}: torch's backward raises {w_grads!r}, vkml's does not"
        return
    if isinstance(g_grads, Exception):
        raise AssertionError(f"{name}: vkml's backward raises {g_grads!r}") from g_grads
    assert (g_grads is None) == (w_grads is None), f"{name}: grads {g_grads is None} vs torch {w_grads is None}"
    for k, (g, w) in enumerate(zip(g_grads or (), w_grads or (), strict=True)):
        assert (g is None) == (w is None), f"{name}: grad {k} is None on one side only"
        if w is not None:
            _close(g, w, f"{name} grad {k}")
