# ruff: noqa: B023  (attempt(lambda: ...) calls each lambda at once, inside the loop that binds its names)
"""PyTorch's test/test_nn.py, its TestNN tests of the RNN family and of the Transformer modules, run on torch and
on vkml side by side (tests/test_pytorch_suite_modules.py has the rest of TestNN's module tests).

Each scenario ``fn(m)`` follows one of TestNN's tests with ``m`` torch or vkml: the *Cell modules and their
shape checks, RNN/LSTM/GRU with layers, directions, batch_first, proj_size, initial states, packed and unbatched
inputs and their errors, and the Transformer layers with masks, norm_first and activations, whose weights a
scenario sets (PyTorch's tests fill them with cosines) so that both libraries compute the same function. The
default suite runs the scenarios that build no kernel and a sample of the others; ``-m exhaustive`` runs them all.
"""

from __future__ import annotations

import warnings

import pytest
from pytorch_suite import check, known_params
from pytorch_suite_ops import on_device
from test_pytorch_suite_modules import attempt, rnd

SC = {}  # the default suite's
SLOW = {}  # the exhaustive run's (each computes with kernels)


def sc(f):
    SC[f.__name__] = f
    return f


def slow(f):
    SLOW[f.__name__] = f
    return f


def fill_cos(m, module):
    """Every parameter of ``module`` set to cos(0, 1, 2, ...) in its shape, as PyTorch's Transformer tests do."""
    with m.no_grad():
        for p in module.parameters():
            p.copy_(m.cos(m.arange(0, p.numel()).float().view(p.shape)))
    return module


def fill_ramp(m, module, scale=0.3):
    """Every parameter set to a ramp in [-scale, scale] times its index (deterministic, distinct per tensor)."""
    with m.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(m.linspace(-scale, scale, p.numel()).reshape(p.shape) * (1 + 0.1 * i))
    return module


# ---------- cells
@sc
def rnn_cell_no_broadcasting(m):
    out = []
    x, good = m.tensor(rnd(3, 4)), m.tensor(rnd(3, 5))
    for bad_input, bad_hx in ((x, m.tensor(rnd(1, 5))), (x, m.tensor(rnd(3, 1))), (m.tensor(rnd(3, 1)), good)):
        out.append(attempt(lambda: m.nn.RNNCell(4, 5)(bad_input, bad_hx), words=False))
        out.append(attempt(lambda: m.nn.GRUCell(4, 5)(bad_input, bad_hx), words=False))
        out.append(attempt(lambda: m.nn.LSTMCell(4, 5)(bad_input, (bad_hx, good)), words=False))
        out.append(attempt(lambda: m.nn.LSTMCell(4, 5)(bad_input, (good, bad_hx)), words=False))
    return out


@slow
def lstm_cell_loop(m):
    out = []
    for bias in (True, False):
        x = m.tensor(rnd(3, 4), requires_grad=True)
        hx, cx = m.tensor(rnd(3, 5)), m.tensor(rnd(3, 5, seed=1))
        lstm = fill_ramp(m, m.nn.LSTMCell(4, 5, bias=bias))
        for _ in range(3):
            hx, cx = lstm(x, (hx, cx))
        (hx + cx).sum().backward()
        out.append((hx, cx, x.grad, [p.grad for p in lstm.parameters()]))
    return out


@sc
def lstm_cell_wrong_sizes(m):
    lstm = m.nn.LSTMCell(4, 5)
    h, c = m.tensor(rnd(3, 5)), m.tensor(rnd(3, 5))
    return (
        attempt(lambda: lstm(m.tensor(rnd(3, 6)), (h, c)), words=False),
        attempt(lambda: lstm(m.tensor(rnd(3, 4)), (m.tensor(rnd(3, 6)), c)), words=False),
        attempt(lambda: lstm(m.tensor(rnd(3, 4)), (h, m.tensor(rnd(3, 6)))), words=False),
    )


# ---------- Transformer
@slow
def transformer_decoder_layer_cos(m):
    out = []
    for batch_first in (False, True):

        def perm(x):
            return x.transpose(1, 0) if batch_first else x

        model = fill_cos(m, m.nn.TransformerDecoderLayer(4, 2, 16, 0.0, batch_first=batch_first))
        out.append(model(m.tensor([[[20.0, 30.0, 40.0, 50.0]]]), m.tensor([[[60.0, 70.0, 80.0, 90.0]]])))
        out.append(model(perm(m.tensor([[[9.0, 10, 11, 12]], [[11.0, 12, 13, 14]]])), m.tensor([[[1.0, 2, 3, 4]]])))
        dec = perm(m.tensor(rnd(3, 2, 4)))
        mem = perm(m.tensor(rnd(5, 2, 4, seed=1)))
        out.append(model(dec, mem))
        mask = m.zeros(2, 3) == 1
        out.append(model(dec, mem, tgt_key_padding_mask=mask))
        mask[0, 2] = 1
        mask[1, 1] = 1
        mask[1, 2] = 1
        out.append(model(dec, mem, tgt_key_padding_mask=mask))
        mmask = m.zeros(2, 5) == 1
        mmask[1, 4] = 1
        mmask[0, 3] = 1
        out.append(model(dec, mem, memory_key_padding_mask=mmask))
    return out


@slow
def transformer_decoder_layer_gelu(m):
    out = []
    dec = m.tensor(rnd(3, 2, 4))
    mem = m.tensor(rnd(5, 2, 4, seed=1))
    for activation in ("gelu", m.nn.functional.gelu, m.nn.GELU()):
        model = fill_cos(m, m.nn.TransformerDecoderLayer(4, 2, 16, 0.0, activation, batch_first=True))
        out.append(model(m.tensor([[[20.0, 30.0, 40.0, 50.0]]]), m.tensor([[[60.0, 70.0, 80.0, 90.0]]])))
        out.append(model(dec, mem))
    return out


@slow
def transformer_decoder_stack(m):
    out = []
    dec = m.tensor(rnd(3, 2, 4))
    mem = m.tensor(rnd(5, 2, 4, seed=1))
    for activation in (m.nn.functional.relu, "gelu"):
        layer = fill_cos(m, m.nn.TransformerDecoderLayer(4, 2, 16, 0.0, activation=activation))
        out.append(m.nn.TransformerDecoder(layer, 1)(dec, mem))
        out.append(
            m.nn.TransformerDecoder(layer, 2)(m.tensor([[[20.0, 30, 40, 50]]]), m.tensor([[[60.0, 70, 80, 90]]]))
        )
        out.append(m.nn.TransformerDecoder(layer, 3)(dec, mem))
        norm = m.nn.LayerNorm(4)
        out.append(m.nn.TransformerDecoder(layer, 2, norm=norm)(dec, mem))
        mask = m.zeros(2, 5) == 1
        mask[0, 4] = True
        out.append(m.nn.TransformerDecoder(layer, 2, norm=norm)(dec, mem, memory_key_padding_mask=mask))
    return out


@sc
def rnn_forward_exceptions(m):
    out = []
    for make, hidden in (
        (lambda: m.nn.LSTM(4, 5, batch_first=True), lambda: (m.zeros(1, 2, 4), m.zeros(1, 2, 4))),
        (lambda: m.nn.LSTM(4, 5, batch_first=True, proj_size=3), lambda: (m.zeros(1, 2, 4), m.zeros(1, 2, 4))),
        (lambda: m.nn.GRU(4, 5, batch_first=True), lambda: m.zeros(1, 2, 4)),
        (lambda: m.nn.RNN(4, 5, batch_first=True), lambda: m.zeros(1, 2, 4)),
    ):
        rnn = make()
        out.append(attempt(lambda: rnn(m.tensor(rnd(2, 3, 4)), hidden())))
        out.append(attempt(lambda: rnn(m.tensor(rnd(2, 3, 3)))))
    return out


def _transformer_forward(m, enc_shape, dec_shape, **masks):
    model = fill_ramp(m, m.nn.Transformer(8, 2, 1, 1, 16, 0.0))
    src, tgt = m.tensor(rnd(*enc_shape)), m.tensor(rnd(*dec_shape, seed=1))
    kwargs = {}
    for name, size in masks.items():
        if name in ("src_mask", "tgt_mask"):
            kwargs[name] = model.generate_square_subsequent_mask(size)
        elif name == "memory_mask":
            kwargs[name] = m.tensor(rnd(*size))
        else:
            kwargs[name] = m.tensor(rnd(*size) > 0)
    return attempt(lambda: model(src, tgt, **kwargs), words=False)


@slow
def transformer_args_check(m):
    seq, tgt, bsz, d = 5, 3, 2, 8
    enc, dec = (seq, bsz, d), (tgt, bsz, d)
    return [
        _transformer_forward(m, (seq, 3, d), dec),
        _transformer_forward(m, enc, (tgt, 3, d)),
        _transformer_forward(m, (seq, bsz, 6), dec),
        _transformer_forward(m, enc, (tgt, bsz, 6)),
        _transformer_forward(m, enc, dec, src_mask=seq + 1),
        _transformer_forward(m, enc, dec, tgt_mask=tgt + 1),
        _transformer_forward(m, enc, dec, memory_mask=(tgt + 1, seq + 1)),
        _transformer_forward(m, enc, dec, src_key_padding_mask=(3, seq + 1)),
        _transformer_forward(m, enc, dec, tgt_key_padding_mask=(3, tgt + 1)),
        _transformer_forward(m, enc, dec, memory_key_padding_mask=(3, seq + 1)),
        _transformer_forward(m, enc, dec, src_key_padding_mask=(bsz, seq), memory_key_padding_mask=(bsz, seq)),
    ]


@sc
def transformer_constructor_checks(m):
    F = m.nn.functional
    out = [attempt(lambda: m.nn.Transformer(8, 3, 1, 1, 16, 0.3), words=False)]
    for activation in (F.relu, F.gelu):
        out.append(m.nn.Transformer(8, 2, 1, 1, 16, 0.3, activation).encoder.layers[0].activation is activation)
    out.append(attempt(lambda: m.nn.Transformer(8, 2, 1, 1, 16, 0.3, "abc")))
    for name in ("TransformerEncoderLayer", "TransformerDecoderLayer"):
        for activation in (F.relu, F.gelu, "relu", "gelu"):
            layer = getattr(m.nn, name)(8, 2, 16, 0.3, activation)
            out.append((getattr(layer, "activation_relu_or_gelu", None), layer.activation is activation))
        out.append(attempt(lambda: getattr(m.nn, name)(8, 2, 16, 0.3, "abc")))
    return out


@sc
def rnn_args_check(m):
    input_size, hidden_size, layers, batch, seq, bad = 3, 5, 2, 4, 6, 7
    good_in, good_h = (seq, batch, input_size), (layers, batch, hidden_size)
    out = []
    for mode in ("RNN", "GRU", "LSTM"):
        for in_shape, h_shape in (
            ((seq, bad, input_size), good_h),
            (good_in, (layers, bad, hidden_size)),
            ((seq, batch, bad), good_h),
            (good_in, (layers, batch, bad)),
            (good_in, (bad, batch, hidden_size)),
        ):
            model = getattr(m.nn, mode)(input_size, hidden_size, layers)
            x, h = m.tensor(rnd(*in_shape)), m.tensor(rnd(*h_shape))
            if mode != "LSTM":
                out.append(attempt(lambda: model(x, h)))
            elif h_shape == good_h:
                out.append(attempt(lambda: model(x, (h, h))))
            else:
                g = m.tensor(rnd(*good_h))
                out.append(attempt(lambda: model(x, (h, g))))
                out.append(attempt(lambda: model(x, (g, h))))
    return out


@sc
def projections_lstm_args_check(m):
    input_size, hidden_size, proj, layers, batch, seq, bad = 3, 5, 2, 2, 4, 6, 7
    good_in, good_h, good_c = (seq, batch, input_size), (layers, batch, proj), (layers, batch, hidden_size)
    out = []
    for in_shape, h_shape, c_shape in (
        ((seq, bad, input_size), good_h, good_c),
        (good_in, (layers, bad, proj), (layers, bad, hidden_size)),
        ((seq, batch, bad), good_h, good_c),
        (good_in, (layers, batch, bad), (layers, batch, bad)),
        (good_in, (bad, batch, proj), (bad, batch, hidden_size)),
        (good_in, (hidden_size, batch, proj), good_c),
        (good_in, (bad, batch, proj), good_c),
        (good_in, good_h, (bad, batch, hidden_size)),
    ):
        model = m.nn.LSTM(input_size, hidden_size, layers, proj_size=proj)
        x, h, c = m.tensor(rnd(*in_shape)), m.tensor(rnd(*h_shape)), m.tensor(rnd(*c_shape))
        out.append(attempt(lambda: model(x, (h, c))))
    return out


@sc
def transformer_encoder_nested_flags(m):
    out = []
    for kwargs in (
        dict(batch_first=True),
        dict(batch_first=False),
        dict(batch_first=True, norm_first=True),
        dict(batch_first=True, bias=False),
        dict(batch_first=True, activation=m.nn.functional.silu),
        dict(batch_first=True, activation=m.nn.GELU()),
    ):
        layer = m.nn.TransformerEncoderLayer(8, 2, 16, **kwargs)
        for enable in (True, False):
            enc = m.nn.TransformerEncoder(layer, 2, enable_nested_tensor=enable)
            out.append((enc.enable_nested_tensor, enc.use_nested_tensor, enc.mask_check, layer.activation_relu_or_gelu))
    out.append(m.nn.TransformerEncoder(m.nn.TransformerEncoderLayer(9, 3, 16, batch_first=True), 1).use_nested_tensor)
    out.append(m.nn.TransformerEncoder(m.nn.Linear(2, 2), 1, mask_check=False).mask_check)
    return out


@slow
def rnn_initial_hidden_state(m):
    # PyTorch's CPU build says its oneDNN kernels lack projections: a note on its build, not on the module
    warnings.filterwarnings("ignore", "LSTM with projections is not supported with oneDNN")
    out = []
    for mode in ("RNN", "GRU", "LSTM"):
        rnn = fill_ramp(m, getattr(m.nn, mode)(4, 3, 2))
        x = m.tensor(rnd(5, 2, 4))
        h = m.zeros(2, 2, 3)
        o1, h1 = rnn(x, (h, h) if mode == "LSTM" else h)
        o2, h2 = rnn(x)
        out.append((o1, h1, o2, h2))
    for bidir in (False, True):
        rnn = fill_ramp(m, m.nn.LSTM(4, 3, 2, bidirectional=bidir, proj_size=2))
        dirs = 2 if bidir else 1
        x = m.tensor(rnd(5, 2, 4))
        o1, h1 = rnn(x, (m.zeros(2 * dirs, 2, 2), m.zeros(2 * dirs, 2, 3)))
        out.append((o1, h1, rnn(x)))
    return out


@sc
def projections_on_gru_and_rnn(m):
    return [attempt(lambda: getattr(m.nn, mode)(30, 20, 2, proj_size=10)) for mode in ("RNN", "GRU")]


def _noncontig(m, t):
    return m.stack([t.clone().zero_(), t], t.dim()).select(t.dim(), 1)


def _rnn_forward_backward(m, module, bias, bidirectional, batch_first, contig, variable_len, proj=0, dropout=0.0):
    """TestNN._test_RNN_cpu_vs_cudnn's forward_backward, with PyTorch's sizes made smaller: outputs, states and
    every gradient (the input's, the states', the weights')."""
    input_size, hidden, layers, seq, batch = 4, 3, 2, 5, 4
    dirs = 2 if bidirectional else 1
    out_size = (proj or hidden) * dirs
    kwargs = dict(bias=bias, dropout=dropout, bidirectional=bidirectional, batch_first=batch_first)
    rnn = fill_ramp(m, module(input_size, hidden, layers, **kwargs, **({"proj_size": proj} if proj else {})))
    shape = (batch, seq) if batch_first else (seq, batch)
    x = m.tensor(rnd(*shape, input_size))
    grad_out = m.tensor(rnd(*shape, out_size, seed=1))
    hx = m.tensor(rnd(layers * dirs, batch, proj or hidden, seed=2))
    grad_hy = m.tensor(rnd(layers * dirs, batch, proj or hidden, seed=3))
    if not contig:
        x, grad_out, hx, grad_hy = (_noncontig(m, t) for t in (x, grad_out, hx, grad_hy))
    x = x.clone().requires_grad_(True)
    given = x
    if variable_len:
        given = m.nn.utils.rnn.pack_padded_sequence(x, [5, 4, 2, 1], batch_first=batch_first)
        grad_out = m.nn.utils.rnn.pack_padded_sequence(grad_out, [5, 4, 2, 1], batch_first=batch_first).data
    lstm = module is m.nn.LSTM
    hx = hx.clone().requires_grad_(True)
    cx = m.tensor(rnd(layers * dirs, batch, hidden, seed=4)).requires_grad_(True) if lstm else None
    output, hy = rnn(given, (hx, cx) if lstm else hx)
    if variable_len:
        output = output.data
    if lstm:
        m.autograd.backward([output, hy[0], hy[1]], [grad_out, grad_hy, m.ones_like(hy[1])])
    else:
        m.autograd.backward([output, hy], [grad_out, grad_hy])
    return output, hy, x.grad, hx.grad, cx.grad if lstm else None, [[w.grad for w in ws] for ws in rnn.all_weights]


# a sample of PyTorch's 2^6 combinations per module (bias, bidirectional, batch_first, contig, variable_len)
_RNN_COMBOS = [
    (True, False, False, True, False),
    (True, True, True, False, False),
    (False, True, False, True, True),
    (True, False, True, False, True),
]
for _mode in ("RNN", "LSTM", "GRU"):
    for _k, _combo in enumerate(_RNN_COMBOS):

        def _scenario(m, mode=_mode, combo=_combo):
            return _rnn_forward_backward(m, getattr(m.nn, mode), *combo)

        SLOW[f"rnn_forward_backward_{_mode}_{_k}"] = _scenario
for _k, _combo in enumerate(_RNN_COMBOS):

    def _scenario(m, combo=_combo):
        return _rnn_forward_backward(m, m.nn.LSTM, *combo, proj=2)

    SLOW[f"lstm_proj_forward_backward_{_k}"] = _scenario


@slow
def rnn_relu_forward_backward(m):
    out = []
    for nonlinearity in ("tanh", "relu"):
        rnn = fill_ramp(m, m.nn.RNN(4, 3, 2, nonlinearity=nonlinearity))
        x = m.tensor(rnd(5, 4, 4), requires_grad=True)
        o, h = rnn(x, m.tensor(rnd(2, 4, 3)))
        m.autograd.backward([o, h], [m.tensor(rnd(5, 4, 3, seed=1)), m.ones(2, 4, 3)])
        out.append((o, h, x.grad, [p.grad for p in rnn.parameters()]))
    return out


@sc
def rnn_all_weights_and_names(m):
    out = []
    for make in (
        lambda: m.nn.RNN(4, 3, 2, bias=False),
        lambda: m.nn.GRU(4, 3, 1, bidirectional=True),
        lambda: m.nn.LSTM(4, 3, 2, bidirectional=True, proj_size=2),
    ):
        rnn = make()
        out.append(([[tuple(w.shape) for w in ws] for ws in rnn.all_weights], rnn._flat_weights_names))
        out.append([type(w).__name__ for w in rnn._flat_weights])
    return out


@slow
def rnn_dropout_layers(m):
    m.manual_seed(0)
    out = []
    for p in (0, 0.276, 1):
        for train in (True, False):
            rnn = m.nn.RNN(4, 50, 2, bias=False, dropout=p, nonlinearity="relu")
            rnn.train(train)
            for w in (rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.weight_ih_l1, rnn.weight_hh_l1):
                w.data.fill_(1)
            output, hy = rnn(m.ones(1, 1, 4), m.zeros(2, 1, 50))
            val = output[0][0][0].item()
            # dropout draws differ between the libraries: what PyTorch's test checks is compared
            kept = val * (1 - p) if 0 < p < 1 and train else None
            out.append(
                (
                    bool(output.min() == output.max()) if p in (0, 1) or not train else None,
                    val if p in (0, 1) or not train else None,
                    None if kept is None else (150 < val < 250, min(kept % 4, 4 - kept % 4) < 1e-2),
                    hy[0][0][0].item(),
                    bool(hy[1].min() == hy[1].max()) if p in (0, 1) or not train else None,
                )
            )
    return out


@sc
def rnn_seq_len_zero(m):
    out = []
    for module in (m.nn.RNN, m.nn.LSTM, m.nn.GRU):
        for bidirectional in (True, False):
            out.append(attempt(lambda: module(5, 6, bidirectional=bidirectional)(m.ones(0, 10, 5))))
    return out


@slow
def rnn_batch_size_zero(m):
    out = []
    for module in (m.nn.RNN, m.nn.LSTM, m.nn.GRU):
        rnn = module(input_size=3, hidden_size=4)
        outs = rnn(m.zeros((5, 0, 3)))
        outs[0].sum().backward()
        out.append((outs[0].shape, [p.grad for p in rnn.parameters()]))
    return out


@slow
def rnn_change_dropout_eval(m):
    rnn = fill_ramp(m, m.nn.RNN(4, 5, 2, dropout=0, nonlinearity="relu")).eval()
    x = m.tensor(rnd(3, 2, 4))
    out = []
    for p in (0, 0.5, 0, 0.7, 1):
        rnn.dropout = p
        out.append(rnn(x))
    rnn.train()
    for p in (0, 1):
        rnn.dropout = p
        out.append(rnn(x))
    return out


@slow
def rnn_save_load_flatten(m):
    import io

    rnn = fill_ramp(m, m.nn.RNN(4, 5, 2, bias=False, dropout=0.2, nonlinearity="relu")).eval()
    x, hx = m.tensor(rnd(1, 1, 4)), m.tensor(rnd(2, 1, 5))
    buf = io.BytesIO()
    m.save(rnn, buf)
    buf.seek(0)
    back = m.load(buf, weights_only=False)
    back.flatten_parameters()
    return rnn(x, hx), back(x, hx), type(back).__name__, back.dropout, back.training


# Where vkml still differs from PyTorch, and why (strict: a fix makes the test fail until it leaves this list)
KNOWN = {}


@pytest.mark.parametrize("name", known_params(SC, KNOWN))
def test_rnn_scenario_matches_torch(name: str) -> None:
    check(SC[name], rtol=1e-4, atol=1e-5)


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", known_params(SLOW, KNOWN))
def test_rnn_scenario_with_kernels_matches_torch(name: str) -> None:
    check(SLOW[name], rtol=1e-4, atol=1e-5)


def test_gru_cell_on_vulkan(gpu) -> None:
    """A sample on the Vulkan device: two GRUCell steps and their gradients."""

    def scenario(m):
        cell = fill_ramp(m, m.nn.GRUCell(3, 2))
        x = m.tensor(rnd(2, 3), requires_grad=True)
        h = cell(x, cell(x))
        h.sum().backward()
        return h, x.grad, cell.weight_hh.grad

    check(on_device(gpu, scenario), rtol=1e-4, atol=1e-5)


@pytest.mark.exhaustive
def test_lstm_and_transformer_on_vulkan(gpu) -> None:
    """A sample on the Vulkan device: a bidirectional two-layer LSTM with projections over a packed batch, and
    a norm-first encoder layer with a padding mask, with their gradients."""

    def scenario(m):
        lstm = fill_ramp(m, m.nn.LSTM(4, 3, 2, bidirectional=True, proj_size=2, batch_first=True))
        x = m.tensor(rnd(3, 5, 4), requires_grad=True)
        packed = m.nn.utils.rnn.pack_padded_sequence(x, [5, 3, 2], batch_first=True)
        out, (h, c) = lstm(packed)
        layer = fill_ramp(m, m.nn.TransformerEncoderLayer(4, 2, 8, 0.0, "gelu", batch_first=True, norm_first=True))
        mask = m.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 2 + [True] * 3])
        y = layer(x, src_key_padding_mask=mask)
        (out.data.sum() + h.sum() + c.sum() + y.sum()).backward()
        return out.data, h, c, y, x.grad, [p.grad for p in lstm.parameters()]

    check(on_device(gpu, scenario), rtol=1e-4, atol=1e-5)
