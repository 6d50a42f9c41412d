"""Recurrent layers with ``torch.nn``'s names, arguments, parameter names and initialisation.

RNNCell, LSTMCell, GRUCell (one step) and RNN, LSTM, GRU (a sequence, ``num_layers`` deep,
optionally bidirectional). Each step is a composite of matmuls and elementwise ops; the input
projection of a whole layer is one matmul before the time loop. A torch module's
``state_dict`` loads and gives torch's outputs within float32 rounding (tests/test_nn_rnn.py).

>>> import vkml
>>> out, (h, c) = LSTM(4, 6, num_layers=2)(vkml.ones(5, 3, 4))
>>> out.shape, h.shape
((5, 3, 6), (2, 3, 6))
"""

from __future__ import annotations

import math

from ..frontend import creation
from ..frontend import operators as functions
from ..frontend import random as vkrandom
from . import init
from .module import Module, Parameter
from .utils import rnn as rnn_utils

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _linear(x, weight, bias):
    out = functions.matmul(x, functions.transpose(weight, 0, 1))
    return out if bias is None else out + bias


def _step(mode: str, x_proj, h, c, w_hh, b_hh):
    """One time step from the input's projection ``x_proj`` (x W_ihᵀ + b_ih): the new (h, c) (c only for LSTM)."""
    h_proj = _linear(h, w_hh, b_hh)
    if mode == "RNN_TANH":
        return functions.tanh(x_proj + h_proj), None
    if mode == "RNN_RELU":
        return functions.relu(x_proj + h_proj), None
    size = h.shape[-1]

    def gate(t, i):
        return t[..., i * size : (i + 1) * size]

    if mode == "LSTM":
        gates = x_proj + h_proj
        i, f = functions.sigmoid(gate(gates, 0)), functions.sigmoid(gate(gates, 1))
        g, o = functions.tanh(gate(gates, 2)), functions.sigmoid(gate(gates, 3))
        c = f * c + i * g
        return o * functions.tanh(c), c
    r = functions.sigmoid(gate(x_proj, 0) + gate(h_proj, 0))
    z = functions.sigmoid(gate(x_proj, 1) + gate(h_proj, 1))
    n = functions.tanh(gate(x_proj, 2) + r * gate(h_proj, 2))
    return (1.0 - z) * n + z * h, None


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
        h, c = _step(self.mode, _linear(x, self.weight_ih, self.bias_ih), states[0], c, self.weight_hh, self.bias_hh)
        if not batched:
            h = functions.squeeze(h, 0)
            c = None if c is None else functions.squeeze(c, 0)
        return h, c


class RNNCell(_CellBase):
    """h' = tanh (or relu)(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)."""

    _name = "RNNCell"

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh", device=None, dtype=None
    ):
        super().__init__(input_size, hidden_size, bias, nonlinearity, device, dtype)

    def forward(self, input, hx=None):
        return self._cell(input, hx)[0]


class LSTMCell(_CellBase):
    """Gates i, f, g, o (in that order in weight_ih's rows); c' = f c + i g, h' = o tanh(c'). Returns (h', c')."""

    _name = "LSTMCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, "tanh", device, dtype)

    def forward(self, input, hx=None):
        return self._cell(input, (None, None) if hx is None else tuple(hx))


class GRUCell(_CellBase):
    """Gates r, z, n; n = tanh(x_n + r (h W_hn + b_hn)), h' = (1 - z) n + z h."""

    _name = "GRUCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, "tanh", device, dtype)

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
    ):
        super().__init__()
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1:
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an element being zeroed"
            )
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError(f"hidden_size must be a positive integer, got {hidden_size!r}")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError(f"num_layers must be a positive integer, got {num_layers!r}")
        self.mode = _mode(self._name, nonlinearity)
        if self._name == "RNN":
            self.nonlinearity = nonlinearity
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional = bidirectional
        gates = _GATES[self.mode] * hidden_size
        directions = 2 if bidirectional else 1
        for layer in range(num_layers):
            width = input_size if layer == 0 else hidden_size * directions
            for suffix in ("", "_reverse")[:directions]:
                shapes = {"weight_ih": (gates, width), "weight_hh": (gates, hidden_size)}
                if bias:
                    shapes |= {"bias_ih": (gates,), "bias_hh": (gates,)}
                for kind, shape in shapes.items():
                    value = creation.zeros(*shape, dtype=dtype, device=device)
                    self.register_parameter(f"{kind}_l{layer}{suffix}", Parameter(value))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch's: every parameter uniform in ±1/sqrt(hidden_size), in registration order."""
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
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

    def _initial(self, h, batch: int, batched: bool, x):
        directions = 2 if self.bidirectional else 1
        want = (self.num_layers * directions, batch, self.hidden_size)
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
            raise RuntimeError(f"Expected hidden size {want}, got {tuple(h.shape)}")
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

    def _run(self, input, hx, running=None):
        """``running[t]``: a (batch, 1) bool tensor, whether each sequence is still running at step ``t``
        (packed input, then time-major whatever ``batch_first``); None when every sequence runs every step."""
        batch_first = self.batch_first and running is None
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
        lstm = self.mode == "LSTM"
        h0 = self._initial(hx[0] if lstm and hx is not None else hx, batch, batched, x)
        c0 = self._initial(hx[1], batch, batched, x) if lstm and hx is not None else h0 if lstm else None
        directions = 2 if self.bidirectional else 1
        last_h, last_c = [], []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                weights = [
                    getattr(self, f"{k}{suffix}", None) for k in ("weight_ih", "bias_ih", "weight_hh", "bias_hh")
                ]
                index = layer * directions + direction
                h, c = h0[index], c0[index] if lstm else None
                x_proj = _linear(x, weights[0], weights[1])  # every step's input projection in one matmul
                order = range(steps - 1, -1, -1) if direction else range(steps)
                hs = [None] * steps
                for t in order:
                    h_new, c_new = _step(self.mode, x_proj[t], h, c, weights[2], weights[3])
                    if running is None:
                        h, c = h_new, c_new
                    else:  # a finished sequence keeps its state; its padded output is never read
                        h = functions.where(running[t], h_new, h)
                        c = functions.where(running[t], c_new, c) if lstm else None
                    hs[t] = functions.unsqueeze(h, 0)
                outputs.append(functions.cat(hs, 0))
                last_h.append(functions.unsqueeze(h, 0))
                if lstm:
                    last_c.append(functions.unsqueeze(c, 0))
            x = outputs[0] if directions == 1 else functions.cat(outputs, 2)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                keep = vkrandom.keep_mask(x.shape, self.dropout, x.device)
                x = functions.where(keep, x * (1.0 / (1.0 - self.dropout)), 0.0) if self.dropout < 1 else x * 0.0
        h_n = functions.cat(last_h, 0)
        c_n = functions.cat(last_c, 0) if lstm else None
        if not batched:
            x = functions.squeeze(x, 1)
            h_n = functions.squeeze(h_n, 1)
            c_n = None if c_n is None else functions.squeeze(c_n, 1)
        elif batch_first:
            x = functions.transpose(x, 0, 1)
        return x, h_n, c_n


class RNN(_RNNBase):
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
    ):
        super().__init__(
            input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, nonlinearity, device, dtype
        )

    def forward(self, input, hx=None):
        run = self._run_packed if isinstance(input, rnn_utils.PackedSequence) else self._run
        out, h, _ = run(input, hx)
        return out, h


class LSTM(_RNNBase):
    """LSTM over a sequence; ``hx`` is (h_0, c_0). Returns (output, (h_n, c_n)). ``proj_size`` is not supported."""

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
        if proj_size != 0:
            raise NotImplementedError("'LSTM': proj_size > 0 is not supported by vkml")
        super().__init__(
            input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, device=device, dtype=dtype
        )
        self.proj_size = 0

    def forward(self, input, hx=None):
        run = self._run_packed if isinstance(input, rnn_utils.PackedSequence) else self._run
        out, h, c = run(input, hx)
        return out, (h, c)


class GRU(_RNNBase):
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
    ):
        super().__init__(
            input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, device=device, dtype=dtype
        )

    def forward(self, input, hx=None):
        run = self._run_packed if isinstance(input, rnn_utils.PackedSequence) else self._run
        out, h, _ = run(input, hx)
        return out, h
