"""Recurrent layers with ``torch.nn``'s names, arguments, parameter names and initialisation.

RNNCell, LSTMCell, GRUCell (one step) and RNN, LSTM, GRU (a sequence, ``num_layers`` deep,
optionally bidirectional). The input projection of a whole layer is one matmul before the time
loop; each step is one matmul and one elementwise kernel, forward and backward (``_Sequence``;
docs/nn.md gives the counts). A torch module's ``state_dict`` loads and gives torch's outputs
and gradients within float32 rounding (tests/test_nn_rnn.py).

>>> import vkml
>>> out, (h, c) = LSTM(4, 6, num_layers=2)(vkml.ones(5, 3, 4))
>>> out.shape, h.shape
((5, 3, 6), (2, 3, 6))
"""

from __future__ import annotations

import math
import warnings

from ..frontend import amp, autograd, creation
from ..frontend import operators as functions
from ..frontend import random as vkrandom
from ..frontend.autograd_api import Function, FunctionCtx, enable_grad, is_grad_enabled
from ..frontend.autograd_api import grad as autograd_grad
from . import init
from .module import Module, Parameter
from .utils import rnn as rnn_utils

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _linear(x, weight, bias):
    out = functions.matmul(x, functions.transpose(weight, 0, 1))
    return out if bias is None else out + bias


def _gate(t, i: int, size: int):
    return t[..., i * size : (i + 1) * size]


def _fresh(value):
    """A function giving ``value`` as a new node at every call: ``value`` itself, or ``value()``.

    Why: the scheduler computes a node that several expressions read, once its expression is
    large, in a kernel of its own (vkml/schedule/scheduler.py, RECOMPUTE_LIMIT), while a node read
    once is inlined. A step's elementwise work reads some values several times (LSTM's new c,
    GRU's n, a state that is a view of last step's result); building each read anew keeps the step
    one kernel. Equal expressions compute equal bits.
    """
    return value if callable(value) else lambda: value


def _step(mode: str, x_proj, h, c, w_hh, b_hh):
    """One time step from the input's projection ``x_proj`` (x W_ihᵀ + b_ih): the new (h, c) (c
    only for LSTM; ``c`` may be a function giving it, see ``_fresh``) and what the sequence keeps
    (LSTM: the gates before their nonlinearities and the (2, batch, hidden) tensor of h and c;
    GRU: the hidden projection h W_hhᵀ + b_hh).

    A step is one matmul (h W_hhᵀ, with the bias and the gate sums in its epilogue) and one
    elementwise kernel (the gates' nonlinearities and the state update); LSTM's h and c leave
    that kernel as one tensor. The formulas and their order of operations are PyTorch's.
    """
    h_proj = _linear(h, w_hh, b_hh)
    if mode == "RNN_TANH":
        return functions.tanh(x_proj + h_proj), None, None
    if mode == "RNN_RELU":
        return functions.relu(x_proj + h_proj), None, None
    size = w_hh.shape[0] // _GATES[mode]  # h's own width, or LSTM's proj_size below it
    if mode == "LSTM":
        gates, c = x_proj + h_proj, _fresh(c)

        def new_c():  # c' = f c + i g
            i, f = functions.sigmoid(_gate(gates, 0, size)), functions.sigmoid(_gate(gates, 1, size))
            return f * c() + i * functions.tanh(_gate(gates, 2, size))

        h = functions.sigmoid(_gate(gates, 3, size)) * functions.tanh(new_c())
        hc = functions.cat([functions.unsqueeze(h, 0), functions.unsqueeze(new_c(), 0)], 0)
        return hc[0], hc[1], (gates, hc)

    def new_n():  # n = tanh(x_n + r (h W_hnᵀ + b_hn)), r = sigmoid(x_r + h W_hrᵀ + b_hr)
        r = functions.sigmoid(_gate(x_proj, 0, size) + _gate(h_proj, 0, size))
        return functions.tanh(_gate(x_proj, 2, size) + r * _gate(h_proj, 2, size))

    z = functions.sigmoid(_gate(x_proj, 1, size) + _gate(h_proj, 1, size))
    return (h - new_n()) * z + new_n(), None, h_proj  # h' = (h - n) z + n


class _Sequence(Function):
    """One layer and direction over the whole sequence, with a written backward (as cuDNN's).

    Forward: ``_step`` per time step. The result is one tensor, so that one backward call gets
    every gradient: every step's h (T, batch, hidden), or for LSTM every step's (h, c) pair
    (T, 2, batch, hidden).

    Backward, per step from the last: one elementwise kernel writes the gradients of the step's
    gates and the part of the state's gradient that skips the matmul (LSTM: f·dc, GRU: z·dh),
    packed in one tensor, and one matmul the part reaching the previous h through W_hh. After
    the loop, W_hh's gradient is one matmul over all steps, b_hh's one sum, and x_proj's gradient
    every step's gates' gradient stacked (its own backward is one matmul for W_ih, one for x).
    The gradients are PyTorch's formulas; values read several times are built anew (``_fresh``).
    """

    @staticmethod
    def forward(ctx, x_proj, h0, c0, w_hh, b_hh, mode: str, reverse: bool):
        steps = x_proj.shape[0]
        h, c = h0, c0
        hs, kept = [None] * steps, [None] * steps
        for t in range(steps - 1, -1, -1) if reverse else range(steps):
            first = t == (steps - 1 if reverse else 0)
            h, c, kept[t] = _step(
                mode, x_proj[t], h, c if first or mode != "LSTM" else _c_before(kept, t, reverse), w_hh, b_hh
            )
            hs[t] = h
        rows = [functions.unsqueeze(kept[t][1] if mode == "LSTM" else hs[t], 0) for t in range(steps)]
        ctx.mode, ctx.reverse, ctx.values = mode, reverse, (x_proj, h0, c0, w_hh, hs, kept)
        ctx.inputs = (x_proj, h0, c0, w_hh, b_hh)
        return functions.cat(rows, 0)

    @staticmethod
    def backward(ctx, g):
        if is_grad_enabled():  # create_graph=True: differentiate the steps' own ops, recorded anew
            return _recorded_backward(ctx, g)
        mode, reverse = ctx.mode, ctx.reverse
        x_proj, h0, c0, w_hh, hs, kept = ctx.values
        steps, size = len(hs), h0.shape[-1]

        def previous(t: int):
            """The step the forward ran before t, or None at the first."""
            p = t + 1 if reverse else t - 1
            return None if p < 0 or p >= steps else p

        def c_of(t):  # a new view of the c that step t wrote (c0 before the first): see _fresh
            return (lambda: c0) if t is None else (lambda: kept[t][1][1])

        def h_of(t):
            return h0 if t is None else hs[t]

        d_x, d_h = [None] * steps, [None] * steps  # gradients of x_proj[t] and of step t's h projection
        skip = dh_mm = None  # the state's gradient from the later step: beside the matmul, through it
        g_h, g_c = (g[:, 0], g[:, 1]) if mode == "LSTM" else (g, None)
        for t in range(steps) if reverse else range(steps - 1, -1, -1):
            later = (skip, dh_mm)
            # Step t's rows of g, each one view node however often read: a view's offset (t) is a
            # kernel parameter only within a small budget, past it baked into the kernel, so views
            # of g built anew per read made every step's kernel a new one (recompiled per step).
            g_ht = g_h[t]
            g_ct = None if g_c is None else g_c[t]

            def dh(later=later, g_ht=g_ht):  # the gradient reaching h_t
                skip, dh_mm = later
                if skip is None:
                    return g_ht
                return g_ht + (skip() + dh_mm if mode == "GRU" else dh_mm)  # GRU: z·dh skips W_hh

            if mode == "LSTM":
                gates, c_prev, c_t = kept[t][0], c_of(previous(t)), c_of(t)

                def act(k, gates=gates):
                    return (functions.tanh if k == 2 else functions.sigmoid)(_gate(gates, k, size))

                def dc(later=later, c_t=c_t, act=act, dh=dh, g_ct=g_ct):  # the gradient reaching c_t
                    tc2 = functions.tanh(c_t()) * functions.tanh(c_t())  # tanh's gradient reads it twice
                    base = g_ct if later[0] is None else g_ct + later[0]()
                    return base + dh() * act(3) * (1 - tc2)

                def sig_grad(k, act=act):
                    y = act(k)
                    return y * (1 - y)

                parts = [
                    dc() * act(2) * sig_grad(0),
                    dc() * c_prev() * sig_grad(1),
                    dc() * act(0) * (1 - act(2) * act(2)),
                    dh() * functions.tanh(c_t()) * sig_grad(3),
                    dc() * act(1),
                ]
                packed = functions.cat(parts, -1)
                d_x[t] = d_h[t] = packed[..., : 4 * size]
                skip = _tail(packed, 4 * size)
            elif mode == "GRU":
                h_proj, h_prev = kept[t], h_of(previous(t))
                xp = [_gate(x_proj[t], k, size) for k in range(3)]  # one view node each, as g_ht

                def r(xp=xp, h_proj=h_proj):
                    return functions.sigmoid(xp[0] + _gate(h_proj, 0, size))

                def z(xp=xp, h_proj=h_proj):
                    return functions.sigmoid(xp[1] + _gate(h_proj, 1, size))

                def n(xp=xp, h_proj=h_proj, r=r):
                    return functions.tanh(xp[2] + r() * _gate(h_proj, 2, size))

                def dn(dh=dh, z=z, n=n):  # the gradient reaching n's argument
                    return dh() * (1 - z()) * (1 - n() * n())

                packed = functions.cat(
                    [
                        dn(),
                        dn() * _gate(h_proj, 2, size) * (r() * (1 - r())),
                        dh() * (h_prev - n()) * (z() * (1 - z())),
                        dn() * r(),
                        dh() * z(),
                    ],
                    -1,
                )
                d_h[t] = packed[..., size : 4 * size]  # (dr, dz, dn·r)
                d_x[t] = functions.cat([packed[..., size : 3 * size], packed[..., :size]], -1)  # (dr, dz, dn)
                skip = _tail(packed, 4 * size)
            else:
                h_t = hs[t]
                d = dh() * (1 - h_t * h_t) if mode == "RNN_TANH" else functions.where(h_t > 0, dh(), 0.0)
                d_x[t] = d_h[t] = d
                skip = _nothing
            dh_mm = functions.matmul(d_h[t], w_hh)
        needs = ctx.needs_input_grad
        grads = [None] * 7
        if needs[0]:
            grads[0] = functions.cat([functions.unsqueeze(d, 0) for d in d_x], 0)
        if needs[1]:
            grads[1] = skip() + dh_mm if mode == "GRU" else dh_mm
        if mode == "LSTM" and needs[2]:
            grads[2] = skip()
        if needs[3] or needs[4]:
            stacked = functions.cat(d_h, 0)  # (T·batch, gates)
            if needs[3]:
                h_prev = functions.cat([h_of(previous(t)) for t in range(steps)], 0)
                grads[3] = functions.matmul(functions.transpose(stacked, 0, 1), h_prev)
            if needs[4]:
                grads[4] = stacked.sum(0)
        return tuple(grads)


def _recorded_backward(ctx, g):
    """The gradients as a graph of the steps' ops (a gradient of the gradient needs one): the
    forward recomputed with recording on, then differentiated with ``create_graph``."""
    args = ctx.inputs
    wanted = [i for i, need in enumerate(ctx.needs_input_grad[:5]) if need]
    with enable_grad():
        rows = _Sequence.forward(FunctionCtx((False,) * 7), *args, ctx.mode, ctx.reverse)
        found = autograd_grad(rows, [args[i] for i in wanted], g, create_graph=True, allow_unused=True)
    grads = [None] * 7
    for i, value in zip(wanted, found):
        grads[i] = value
    return tuple(grads)


def _tail(packed, start: int):
    """A function giving a new view of ``packed[..., start:]`` (see ``_fresh``)."""
    return lambda: packed[..., start:]


def _nothing():
    return None


def _c_before(kept, t: int, reverse: bool):
    """A function giving a new view of the c that the step before t wrote (see ``_fresh``)."""
    p = t + 1 if reverse else t - 1
    return lambda: kept[p][1][1]


def _mode(name: str, nonlinearity: str) -> str:
    if name != "RNN":
        return name
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
    return "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"


class _CellBase(Module):
    _name = ""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, nonlinearity: str, device, dtype):
        super().__init__()
        self.mode = _mode(self._name.removesuffix("Cell"), nonlinearity)
        gates = _GATES[self.mode]
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        if self._name == "RNNCell":
            self.nonlinearity = nonlinearity
        self.weight_ih = Parameter(creation.zeros(gates * hidden_size, input_size, dtype=dtype, device=device))
        self.weight_hh = Parameter(creation.zeros(gates * hidden_size, hidden_size, dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(creation.zeros(gates * hidden_size, dtype=dtype, device=device))
            self.bias_hh = Parameter(creation.zeros(gates * hidden_size, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch's: every parameter uniform in ±1/sqrt(hidden_size), in registration order."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            text += ", bias=False"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            text += f", nonlinearity={self.nonlinearity}"
        return text

    def _inputs(self, input, hx):
        if input.ndim not in (1, 2):
            raise ValueError(f"{self._name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"{self._name}: input has inconsistent input_size: got {input.shape[-1]} expected {self.input_size}"
            )
        batched = input.ndim == 2
        x = input if batched else functions.unsqueeze(input, 0)
        states = hx if isinstance(hx, tuple) else (hx,)
        for k, h in enumerate(states):
            if h is not None and h.ndim not in (1, 2):
                what = f"hx[{k}]" if isinstance(hx, tuple) else "hidden"
                raise ValueError(f"{self._name}: Expected {what} to be 1D or 2D, got {h.ndim}D instead")
        out = []
        for h in states:
            if h is None:
                h = creation.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            elif h.ndim != input.ndim:
                raise RuntimeError(
                    f"{self._name}: Expected hidden to be {input.ndim}D for {input.ndim}D input, got {h.ndim}D"
                )
            elif not batched:
                h = functions.unsqueeze(h, 0)
            if tuple(h.shape) != (x.shape[0], self.hidden_size):
                raise RuntimeError(
                    f"{self._name}: hidden has shape {h.shape}, expected {(x.shape[0], self.hidden_size)}"
                )
            out.append(h)
        return x, out, batched

    def _cell(self, input, hx):
        x, states, batched = self._inputs(input, hx)
        c = states[1] if len(states) > 1 else None
        h, c, _ = _step(self.mode, _linear(x, self.weight_ih, self.bias_ih), states[0], c, self.weight_hh, self.bias_hh)
        if not batched:
            h = functions.squeeze(h, 0)
            c = None if c is None else functions.squeeze(c, 0)
        return h, c


class RNNCellBase(_CellBase):
    """PyTorch's base of ``RNNCell``, ``LSTMCell`` and ``GRUCell`` (``isinstance(m, nn.RNNCellBase)``).

    Built directly, ``RNNCellBase(input_size, hidden_size, bias, num_chunks)`` holds PyTorch's
    parameters (``num_chunks * hidden_size`` rows) and, as PyTorch's, no ``forward``.
    """

    forward = Module.forward

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None, dtype=None):
        Module.__init__(self)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        rows = num_chunks * hidden_size
        self.weight_ih = Parameter(creation.zeros(rows, input_size, dtype=dtype, device=device))
        self.weight_hh = Parameter(creation.zeros(rows, hidden_size, dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(creation.zeros(rows, dtype=dtype, device=device))
            self.bias_hh = Parameter(creation.zeros(rows, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()


class RNNCell(RNNCellBase):
    """h' = tanh (or relu)(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)."""

    _name = "RNNCell"

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh", device=None, dtype=None
    ):
        _CellBase.__init__(self, input_size, hidden_size, bias, nonlinearity, device, dtype)

    def forward(self, input, hx=None):
        return self._cell(input, hx)[0]


class LSTMCell(RNNCellBase):
    """Gates i, f, g, o (in that order in weight_ih's rows); c' = f c + i g, h' = o tanh(c'). Returns (h', c')."""

    _name = "LSTMCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        _CellBase.__init__(self, input_size, hidden_size, bias, "tanh", device, dtype)

    def forward(self, input, hx=None):
        return self._cell(input, (None, None) if hx is None else tuple(hx))


class GRUCell(RNNCellBase):
    """Gates r, z, n; n = tanh(x_n + r (h W_hn + b_hn)), h' = (1 - z) n + z h."""

    _name = "GRUCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        _CellBase.__init__(self, input_size, hidden_size, bias, "tanh", device, dtype)

    def forward(self, input, hx=None):
        return self._cell(input, hx)[0]


class _RNNBase(Module):
    _name = ""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        nonlinearity: str = "tanh",
        device=None,
        dtype=None,
        proj_size: int = 0,
    ):
        super().__init__()
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1:
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an element being zeroed"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
                f"num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                UserWarning,
                stacklevel=2,
            )
        # PyTorch's checks, in its order (module_db's RNN error inputs pin the classes)
        for name, value in (("bias", bias), ("batch_first", batch_first)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} should be of type bool, got: {type(value).__name__}")
        for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
            if not isinstance(value, int):
                raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{name} must be greater than zero")
        if not isinstance(num_layers, int):
            raise ValueError(f"num_layers must be a positive integer, got {num_layers!r}")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if not isinstance(proj_size, int) or proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        self.proj_size = proj_size
        self.mode = _mode(self._name, nonlinearity)
        if self._name == "RNN":
            self.nonlinearity = nonlinearity
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional = bidirectional
        gates = _GATES[self.mode] * hidden_size
        directions = 2 if bidirectional else 1
        real_hidden = proj_size or hidden_size  # the width of h (LSTM's projection's, when it has one)
        for layer in range(num_layers):
            width = input_size if layer == 0 else real_hidden * directions
            for suffix in ("", "_reverse")[:directions]:
                shapes = {"weight_ih": (gates, width), "weight_hh": (gates, real_hidden)}
                if bias:
                    shapes |= {"bias_ih": (gates,), "bias_hh": (gates,)}
                if proj_size:
                    shapes |= {"weight_hr": (proj_size, hidden_size)}
                for kind, shape in shapes.items():
                    value = creation.zeros(*shape, dtype=dtype, device=device)
                    self.register_parameter(f"{kind}_l{layer}{suffix}", Parameter(value))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch's: every parameter uniform in ±1/sqrt(hidden_size), in registration order."""
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """Does nothing, as PyTorch's does off cuDNN: each weight already is its own buffer here.

        Programs call it after loading or moving a model (pytorch/examples' word language
        model); the weights it would pack are read where they are at every step.
        """

    @property
    def _all_weights(self) -> list[list[str]]:
        """The parameters' names by layer and direction, each list in registration order (PyTorch's attribute,
        which weight-dropping wrappers such as AWD-LSTM's ``WeightDrop`` read)."""
        directions = 2 if self.bidirectional else 1
        kinds = ("weight_ih", "weight_hh", "bias_ih", "bias_hh") if self.bias else ("weight_ih", "weight_hh")
        kinds += ("weight_hr",) if self.proj_size else ()
        return [
            [f"{kind}_l{layer}{suffix}" for kind in kinds]
            for layer in range(self.num_layers)
            for suffix in ("", "_reverse")[:directions]
        ]

    @property
    def _flat_weights_names(self) -> list[str]:
        return [name for names in self._all_weights for name in names]

    @property
    def _flat_weights(self) -> list:
        """The weights in ``_flat_weights_names``' order, read where they are now."""
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters by layer and direction, each list in registration order (as PyTorch's)."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            text += f", proj_size={self.proj_size}"
        if self.num_layers != 1:  # torch's repr leaves nonlinearity out
            text += f", num_layers={self.num_layers}"
        if not self.bias:
            text += ", bias=False"
        if self.batch_first:
            text += ", batch_first=True"
        if self.dropout != 0:
            text += f", dropout={self.dropout}"
        if self.bidirectional:
            text += ", bidirectional=True"
        return text

    def _initial(self, h, batch: int, batched: bool, x, width: int | None = None, which: str = "hidden"):
        directions = 2 if self.bidirectional else 1
        want = (self.num_layers * directions, batch, width or self.hidden_size)
        if h is None:
            return creation.zeros(*want, dtype=x.dtype, device=x.device)
        if h.ndim != (3 if batched else 2):
            raise RuntimeError(
                f"For {'batched' if batched else 'unbatched'} {x.ndim if batched else 2}-D input, hx should also be "
                f"{3 if batched else 2}-D but got {h.ndim}-D tensor"
            )
        if not batched:
            h = functions.unsqueeze(h, 1)
        if tuple(h.shape) != want:
            raise RuntimeError(f"Expected {which} size {want}, got {list(h.shape)}")
        return h

    def _run_packed(self, packed, hx):
        """A PackedSequence through the layers: each sequence stops at its own length (its state then
        stays, as PyTorch's packed kernels give), the output packed like the input."""
        padded, lengths = rnn_utils.pad_packed_sequence(packed)
        steps, batch = padded.shape[0], padded.shape[1]
        lengths = lengths.numpy()
        running = [creation.tensor((lengths > t).reshape(batch, 1), device=padded.device) for t in range(steps)]
        out, h_n, c_n = self._run(padded, hx, running)
        data = rnn_utils.pack_time_major(out, packed.batch_sizes, packed.sorted_indices)
        return packed._replace(data=data), h_n, c_n

    def _masked_steps(self, x_proj, h, c, weights, running, reverse: bool, outputs: list):
        """The steps of one layer and direction through autograd, over a packed batch (``running[t]``
        picks, per sequence, the new state or the old one; its padded output is never read) or, with
        ``running`` None, a projected LSTM's full batch. Appends the (T, batch, width of h) outputs to
        ``outputs``; returns the last (h, c)."""
        steps = x_proj.shape[0]
        hs = [None] * steps
        for t in range(steps - 1, -1, -1) if reverse else range(steps):
            h_new, c_new, _ = _step(self.mode, x_proj[t], h, c, weights[2], weights[3])
            if len(weights) > 4:  # LSTM's projection: h = (o tanh(c)) W_hrᵀ
                h_new = _linear(h_new, weights[4], None)
            if running is None:
                h, c = h_new, c_new
                hs[t] = functions.unsqueeze(h, 0)
                continue
            h = functions.where(running[t], h_new, h)
            c = functions.where(running[t], c_new, c) if c is not None else None
            hs[t] = functions.unsqueeze(h, 0)
        outputs.append(functions.cat(hs, 0))
        return h, c

    def _run(self, input, hx, running=None):
        """``running[t]``: a (batch, 1) bool tensor, whether each sequence is still running at step ``t``
        (packed input, then time-major whatever ``batch_first``); None when every sequence runs every step."""
        batch_first = self.batch_first and running is None
        weight_dtype = self.weight_ih_l0.dtype
        if input.dtype != weight_dtype and not any(map(amp.is_autocast_enabled, amp.DEVICE_TYPES)):
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight_dtype}). Convert input: "
                f"input.to({weight_dtype}), or convert model: model.to({input.dtype})"
            )
        if input.ndim not in (2, 3):
            raise ValueError(f"{self._name}: Expected input to be 2D or 3D, got {input.ndim}D tensor instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {input.shape[-1]}"
            )
        batched = input.ndim == 3
        if not batched:
            x = functions.unsqueeze(input, 1)
        elif batch_first:
            x = functions.transpose(input, 0, 1)
        else:
            x = input
        steps, batch = x.shape[0], x.shape[1]
        if steps == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        lstm = self.mode == "LSTM"
        h0 = self._initial(
            hx[0] if lstm and hx is not None else hx,
            batch,
            batched,
            x,
            self.proj_size,
            "hidden[0]" if lstm else "hidden",
        )
        if lstm and hx is not None:
            c0 = self._initial(hx[1], batch, batched, x, which="hidden[1]")
        elif lstm and self.proj_size:
            c0 = self._initial(None, batch, batched, x)
        else:
            c0 = h0 if lstm else None
        directions = 2 if self.bidirectional else 1
        last_h, last_c = [], []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                weights = [
                    getattr(self, f"{k}{suffix}", None) for k in ("weight_ih", "bias_ih", "weight_hh", "bias_hh")
                ]
                if self.proj_size:
                    weights.append(getattr(self, f"weight_hr{suffix}"))
                index = layer * directions + direction
                h, c = h0[index], c0[index] if lstm else None
                x_proj = _linear(x, weights[0], weights[1])  # every step's input projection in one matmul
                # packed, or projected: autograd through the steps (a finished sequence keeps its state)
                if running is not None or self.proj_size:
                    h, c = self._masked_steps(x_proj, h, c, weights, running, bool(direction), outputs)
                    last_h.append(functions.unsqueeze(h, 0))
                    if lstm:
                        last_c.append(functions.unsqueeze(c, 0))
                    continue
                rows = _Sequence.apply(x_proj, h, c, weights[2], weights[3], self.mode, bool(direction))
                last = 0 if direction else steps - 1
                if lstm:
                    outputs.append(rows[:, 0])
                    last_h.append(rows[last : last + 1, 0])
                    last_c.append(rows[last : last + 1, 1])
                else:
                    outputs.append(rows)
                    last_h.append(rows[last : last + 1])
            x = outputs[0] if directions == 1 else functions.cat(outputs, 2)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                keep = vkrandom.keep_mask(x.shape, self.dropout, x.device)
                x = functions.where(keep, x * (1.0 / (1.0 - self.dropout)), 0.0) if self.dropout < 1 else x * 0.0
        h_n = _stacked_states(last_h)
        c_n = _stacked_states(last_c) if lstm else None
        # time-major, PyTorch's output is contiguous (LSTM's rows are h of an (h, c) pair): old code flattens
        # it by output.view(seq * batch, hidden); batch_first gives its transpose, as PyTorch's
        x = x.contiguous()
        if not batched:
            x = functions.squeeze(x, 1)
            h_n = functions.squeeze(h_n, 1)
            c_n = None if c_n is None else functions.squeeze(c_n, 1)
        elif batch_first:
            x = functions.transpose(x, 0, 1)
        return x, h_n, c_n


def _stacked_states(states: list):
    """The final states of each layer and direction, (1, batch, h) each, joined as ``h_n``: a ``cat``, shown
    as PyTorch's one ``StackBackward0`` node (``print(hidden)`` writes its name)."""
    joined = functions.cat(states, 0)
    if joined._ctx is not None and is_grad_enabled():
        autograd.show(joined, "StackBackward0", tuple(autograd.edge(state) for state in states))
    return joined


class RNNBase(_RNNBase):
    """PyTorch's base of ``RNN``, ``LSTM`` and ``GRU`` (``isinstance(m, nn.RNNBase)``).

    Built directly, ``RNNBase(mode, input_size, hidden_size, ...)`` with ``mode`` one of ``'LSTM'``,
    ``'GRU'``, ``'RNN_TANH'``, ``'RNN_RELU'`` holds that network's parameters and, as PyTorch's, no
    ``forward``.
    """

    forward = Module.forward
    _MODES = {
        "LSTM": ("LSTM", "tanh"),
        "GRU": ("GRU", "tanh"),
        "RNN_TANH": ("RNN", "tanh"),
        "RNN_RELU": ("RNN", "relu"),
    }

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ):
        if mode not in self._MODES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        name, nonlinearity = self._MODES[mode]
        object.__setattr__(self, "_name", name)
        _RNNBase.__init__(
            self, input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, nonlinearity,
            device, dtype, proj_size,
        )  # fmt: skip
        if name == "RNN":
            del self.nonlinearity  # PyTorch's base keeps only the mode


def _no_projection(name: str, kwargs: dict) -> None:
    """RNN's and GRU's refusal of LSTM's ``proj_size`` (in PyTorch's words), and of any other extra keyword."""
    if "proj_size" in kwargs:
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
    if kwargs:
        raise TypeError(f"{name}.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")


class RNN(RNNBase):
    """Elman RNN: h_t = tanh (or relu)(x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ + b_hh). Returns (output, h_n)."""

    _name = "RNN"

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device=None,
        dtype=None,
        **kwargs,
    ):
        _no_projection(type(self).__name__, kwargs)
        _RNNBase.__init__(
            self,
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            nonlinearity,
            device,
            dtype,
        )

    def forward(self, input, hx=None):
        run = self._run_packed if isinstance(input, rnn_utils.PackedSequence) else self._run
        out, h, _ = run(input, hx)
        return out, h


class LSTM(RNNBase):
    """LSTM over a sequence; ``hx`` is (h_0, c_0). Returns (output, (h_n, c_n)).

    With ``proj_size`` > 0 each step's h is projected, ``h = (o * tanh(c)) @ weight_hr.T``, as PyTorch's
    LSTMP: h, the output and the next layer's input are ``proj_size`` wide, c stays ``hidden_size``
    wide. Those steps run through autograd (``_Sequence``'s fused backward has no projection).
    """

    _name = "LSTM"

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ):
        _RNNBase.__init__(
            self,
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            device=device,
            dtype=dtype,
            proj_size=proj_size,
        )

    def forward(self, input, hx=None):
        run = self._run_packed if isinstance(input, rnn_utils.PackedSequence) else self._run
        out, h, c = run(input, hx)
        return out, (h, c)


class GRU(RNNBase):
    """GRU over a sequence (gates r, z, n as GRUCell). Returns (output, h_n)."""

    _name = "GRU"

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device=None,
        dtype=None,
        **kwargs,
    ):
        _no_projection(type(self).__name__, kwargs)
        _RNNBase.__init__(
            self,
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            device=device,
            dtype=dtype,
        )

    def forward(self, input, hx=None):
        run = self._run_packed if isinstance(input, rnn_utils.PackedSequence) else self._run
        out, h, _ = run(input, hx)
        return out, h
