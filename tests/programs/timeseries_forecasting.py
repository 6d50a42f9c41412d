"""Time-series forecasting as five reference repositories write it, on synthetic seasonal series.

``MODEL = "tcn"``: locuslab/TCN's temporal blocks, dilated causal ``nn.Conv1d`` (``padding=(k - 1) *
dilation`` cut back by a ``Chomp1d`` slice ``x[:, :, :-chomp].contiguous()``) under
``torch.nn.utils.parametrizations.weight_norm``, weights ``normal_(0, 0.01)`` before wrapping, a 1x1
downsample on the residual, dilations ``2 ** i``; ``"patchtst"``: PatchTST's RevIN (statistics by
``torch.mean``/``torch.var(unbiased=False)`` over ``tuple(range(1, x.ndim - 1))`` kept ``.detach()``-ed,
affine, denormalised by ``(self.affine_weight + self.eps * self.eps)``), channel independence by
``permute`` and ``reshape``, patching by ``nn.ReplicationPad1d((0, stride))`` then
``x.unfold(dimension=-1, size=patch_len, step=stride)``, a learned positional table
``nn.init.uniform_(W_pos, -0.02, 0.02)``, ``nn.TransformerEncoder`` (``batch_first=True``, ``norm_first``,
GELU) and a flatten head ``nn.Flatten(start_dim=-2)``; ``"informer"``: Informer's circular-padded token
``Conv1d`` (``kaiming_normal_(mode="fan_in", nonlinearity="leaky_relu")``), a sinusoidal table kept in a
buffer (``pe.require_grad = False`` as written), ProbSparse attention (keys sampled by ``torch.randint``
and gathered by ``K_expand[:, :, torch.arange(L_Q).unsqueeze(1), index_sample, :]``, the sparsity measure
``max(-1)[0] - sum(-1) / L_K``, ``topk(n_top, sorted=False)``, queries picked and the mean context
written by advanced indexing with ``torch.arange(B)[:, None, None]``) and a distilling ``ConvLayer``
(BatchNorm1d, ELU, ``MaxPool1d(3, 2, 1)``), trained by nesterov SGD with ``ExponentialLR``; ``"deepar"``:
DeepAR's LSTM over lagged values and covariates in one call with a Gaussian (``distributions.Normal``, ``F.softplus`` scale) or ``LIKELIHOOD =
"negbin"`` negative-binomial head (``NegativeBinomial(total_count=1 / alpha, probs=mu * alpha / (1 + mu *
alpha))`` on integer counts, the scale by ``v = 1 + mean``), the negative ``log_prob`` mean as the loss and
a quantile by ``icdf``; ``"seq2seq"``: an encoder ``nn.GRU`` and a decoder ``nn.GRUCell`` in a loop over
the horizon with teacher forcing drawn by ``torch.rand(1).item() < teacher_forcing_ratio``, outputs
written into ``torch.zeros`` by index. Adam (AdamW for PatchTST with a ``OneCycleLR``) with
``clip_grad_norm_``, MSE / MAE on a held-out window under ``torch.no_grad()``."""

from __future__ import annotations

import math

import numpy as np
from shim import F, distributions, lr_scheduler, nn, optim, torch

MODEL = "tcn"  # or "patchtst", "informer", "deepar", "seq2seq"
LIKELIHOOD = "normal"  # DeepAR's head: or "negbin"
DROPOUT = 0.1
DEVICE = "cpu"
SEQ_LEN = 16
PRED_LEN = 4
CHANNELS = 2
BATCH = 4


def make_series(length=64, channels=CHANNELS, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(length)[:, None]
    season = np.sin(2 * np.pi * t / 8 + rng.uniform(0, np.pi, channels))
    trend = 0.02 * t * rng.uniform(0.5, 1.5, channels)
    return (season + trend + 0.1 * rng.standard_normal((length, channels))).astype(np.float32)


def make_windows(series, seq_len=SEQ_LEN, pred_len=PRED_LEN, stride=6):
    xs, ys = [], []
    for start in range(0, len(series) - seq_len - pred_len + 1, stride):
        xs.append(series[start : start + seq_len])
        ys.append(series[start + seq_len : start + seq_len + pred_len])
    return torch.tensor(np.stack(xs)), torch.tensor(np.stack(ys))


# --- TCN (locuslab/TCN) ---------------------------------------------------------------------------


class Chomp1d(nn.Module):
    def __init__(self, chomp_size):
        super().__init__()
        self.chomp_size = chomp_size

    def forward(self, x):
        return x[:, :, : -self.chomp_size].contiguous()


def weight_norm_conv(*args, **kwargs):
    conv = nn.Conv1d(*args, **kwargs)
    conv.weight.data.normal_(0, 0.01)
    return nn.utils.parametrizations.weight_norm(conv)


class TemporalBlock(nn.Module):
    def __init__(self, n_inputs, n_outputs, kernel_size, stride, dilation, padding, dropout=0.2):
        super().__init__()
        self.conv1 = weight_norm_conv(
            n_inputs, n_outputs, kernel_size, stride=stride, padding=padding, dilation=dilation
        )
        self.chomp1 = Chomp1d(padding)
        self.relu1 = nn.ReLU()
        self.dropout1 = nn.Dropout(dropout)
        self.conv2 = weight_norm_conv(
            n_outputs, n_outputs, kernel_size, stride=stride, padding=padding, dilation=dilation
        )
        self.chomp2 = Chomp1d(padding)
        self.relu2 = nn.ReLU()
        self.dropout2 = nn.Dropout(dropout)
        self.net = nn.Sequential(
            self.conv1, self.chomp1, self.relu1, self.dropout1, self.conv2, self.chomp2, self.relu2, self.dropout2
        )
        self.downsample = nn.Conv1d(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
        self.relu = nn.ReLU()
        if self.downsample is not None:
            self.downsample.weight.data.normal_(0, 0.01)

    def forward(self, x):
        out = self.net(x)
        res = x if self.downsample is None else self.downsample(x)
        return self.relu(out + res)


class TemporalConvNet(nn.Module):
    def __init__(self, num_inputs, num_channels, kernel_size=2, dropout=0.2):
        super().__init__()
        layers = []
        for i in range(len(num_channels)):
            dilation_size = 2**i
            in_channels = num_inputs if i == 0 else num_channels[i - 1]
            out_channels = num_channels[i]
            layers += [
                TemporalBlock(
                    in_channels,
                    out_channels,
                    kernel_size,
                    stride=1,
                    dilation=dilation_size,
                    padding=(kernel_size - 1) * dilation_size,
                    dropout=dropout,
                )
            ]
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


class TCNForecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.tcn = TemporalConvNet(CHANNELS, [6, 6, 6], kernel_size=3, dropout=DROPOUT)
        self.linear = nn.Linear(6, PRED_LEN * CHANNELS)

    def forward(self, x):  # x: [batch, seq_len, channels]
        y = self.tcn(x.transpose(1, 2))
        return self.linear(y[:, :, -1]).view(-1, PRED_LEN, CHANNELS)


# --- PatchTST with RevIN --------------------------------------------------------------------------


class RevIN(nn.Module):
    def __init__(self, num_features: int, eps=1e-5, affine=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.affine = affine
        if self.affine:
            self._init_params()

    def forward(self, x, mode: str):
        if mode == "norm":
            self._get_statistics(x)
            x = self._normalize(x)
        elif mode == "denorm":
            x = self._denormalize(x)
        else:
            raise NotImplementedError
        return x

    def _init_params(self):
        self.affine_weight = nn.Parameter(torch.ones(self.num_features))
        self.affine_bias = nn.Parameter(torch.zeros(self.num_features))

    def _get_statistics(self, x):
        dim2reduce = tuple(range(1, x.ndim - 1))
        self.mean = torch.mean(x, dim=dim2reduce, keepdim=True).detach()
        self.stdev = torch.sqrt(torch.var(x, dim=dim2reduce, keepdim=True, unbiased=False) + self.eps).detach()

    def _normalize(self, x):
        x = x - self.mean
        x = x / self.stdev
        if self.affine:
            x = x * self.affine_weight
            x = x + self.affine_bias
        return x

    def _denormalize(self, x):
        if self.affine:
            x = x - self.affine_bias
            x = x / (self.affine_weight + self.eps * self.eps)
        x = x * self.stdev
        x = x + self.mean
        return x


class PatchTST(nn.Module):
    def __init__(self, patch_len=4, stride=2, d_model=8, n_heads=2, d_ff=16, e_layers=1):
        super().__init__()
        self.patch_len, self.stride = patch_len, stride
        self.revin_layer = RevIN(CHANNELS)
        self.padding_patch_layer = nn.ReplicationPad1d((0, stride))
        patch_num = int((SEQ_LEN - patch_len) / stride + 1) + 1
        self.W_P = nn.Linear(patch_len, d_model)
        self.W_pos = nn.Parameter(torch.empty(patch_num, d_model))
        nn.init.uniform_(self.W_pos, -0.02, 0.02)
        self.dropout = nn.Dropout(DROPOUT)
        layer = nn.TransformerEncoderLayer(
            d_model, n_heads, d_ff, dropout=DROPOUT, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, e_layers, enable_nested_tensor=False)
        self.flatten = nn.Flatten(start_dim=-2)
        self.head = nn.Linear(patch_num * d_model, PRED_LEN)

    def forward(self, x):  # x: [bs, seq_len, nvars]
        x = self.revin_layer(x, "norm")
        x = x.permute(0, 2, 1)  # [bs, nvars, seq_len]
        x = self.padding_patch_layer(x)
        x = x.unfold(dimension=-1, size=self.patch_len, step=self.stride)  # [bs, nvars, patch_num, patch_len]
        n_vars = x.shape[1]
        x = self.W_P(x)
        u = torch.reshape(x, (x.shape[0] * x.shape[1], x.shape[2], x.shape[3]))
        u = self.dropout(u + self.W_pos)
        z = self.encoder(u)
        z = torch.reshape(z, (-1, n_vars, z.shape[-2], z.shape[-1]))
        z = self.head(self.flatten(z))  # [bs, nvars, pred_len]
        return self.revin_layer(z.permute(0, 2, 1), "denorm")


# --- Informer (ProbSparse self-attention, distilling) ---------------------------------------------


class TokenEmbedding(nn.Module):
    def __init__(self, c_in, d_model):
        super().__init__()
        self.tokenConv = nn.Conv1d(c_in, d_model, kernel_size=3, padding=1, padding_mode="circular", bias=False)
        for m in self.modules():
            if isinstance(m, nn.Conv1d):
                nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="leaky_relu")

    def forward(self, x):
        return self.tokenConv(x.permute(0, 2, 1)).transpose(1, 2)


class PositionalEmbedding(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        pe = torch.zeros(max_len, d_model).float()
        pe.require_grad = False
        position = torch.arange(0, max_len).float().unsqueeze(1)
        div_term = (torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model)).exp()
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return self.pe[:, : x.size(1)]


class ProbAttention(nn.Module):
    def __init__(self, factor=2, scale=None):
        super().__init__()
        self.factor, self.scale = factor, scale

    def _prob_QK(self, Q, K, sample_k, n_top):
        B, H, L_K, E = K.shape
        _, _, L_Q, _ = Q.shape
        K_expand = K.unsqueeze(-3).expand(B, H, L_Q, L_K, E)
        index_sample = torch.randint(L_K, (L_Q, sample_k))
        K_sample = K_expand[:, :, torch.arange(L_Q).unsqueeze(1), index_sample, :]
        Q_K_sample = torch.matmul(Q.unsqueeze(-2), K_sample.transpose(-2, -1)).squeeze(-2)
        M = Q_K_sample.max(-1)[0] - torch.div(Q_K_sample.sum(-1), L_K)
        M_top = M.topk(n_top, sorted=False)[1]
        Q_reduce = Q[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], M_top, :]
        return torch.matmul(Q_reduce, K.transpose(-2, -1)), M_top

    def forward(self, queries, keys, values):
        B, L_Q, H, D = queries.shape
        _, L_K, _, _ = keys.shape
        queries, keys, values = queries.transpose(2, 1), keys.transpose(2, 1), values.transpose(2, 1)
        U_part = min(self.factor * np.ceil(np.log(L_K)).astype("int").item(), L_K)
        u = min(self.factor * np.ceil(np.log(L_Q)).astype("int").item(), L_Q)
        scores_top, index = self._prob_QK(queries, keys, sample_k=U_part, n_top=u)
        scores_top = scores_top * (self.scale or 1.0 / math.sqrt(D))
        context = values.mean(dim=-2).unsqueeze(-2).expand(B, H, L_Q, values.shape[-1]).clone()
        attn = torch.softmax(scores_top, dim=-1)
        context[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], index, :] = torch.matmul(
            attn, values
        ).type_as(context)
        return context.transpose(2, 1).contiguous()


class AttentionLayer(nn.Module):
    def __init__(self, attention, d_model, n_heads):
        super().__init__()
        self.inner_attention = attention
        self.query_projection = nn.Linear(d_model, d_model)
        self.key_projection = nn.Linear(d_model, d_model)
        self.value_projection = nn.Linear(d_model, d_model)
        self.out_projection = nn.Linear(d_model, d_model)
        self.n_heads = n_heads

    def forward(self, x):
        B, L, _ = x.shape
        H = self.n_heads
        out = self.inner_attention(
            self.query_projection(x).view(B, L, H, -1),
            self.key_projection(x).view(B, L, H, -1),
            self.value_projection(x).view(B, L, H, -1),
        )
        return self.out_projection(out.view(B, L, -1))


class ConvLayer(nn.Module):
    """Informer's distilling: a convolution, BatchNorm, ELU and a stride-2 max-pool halve the sequence."""

    def __init__(self, c_in):
        super().__init__()
        self.downConv = nn.Conv1d(c_in, c_in, kernel_size=3, padding=1, padding_mode="circular")
        self.norm = nn.BatchNorm1d(c_in)
        self.activation = nn.ELU()
        self.maxPool = nn.MaxPool1d(kernel_size=3, stride=2, padding=1)

    def forward(self, x):
        x = self.maxPool(self.activation(self.norm(self.downConv(x.permute(0, 2, 1)))))
        return x.transpose(1, 2)


class Informer(nn.Module):
    def __init__(self, d_model=8, n_heads=2):
        super().__init__()
        self.value_embedding = TokenEmbedding(CHANNELS, d_model)
        self.position_embedding = PositionalEmbedding(d_model)
        self.dropout = nn.Dropout(DROPOUT)
        self.attention = AttentionLayer(ProbAttention(factor=2), d_model, n_heads)
        self.norm1 = nn.LayerNorm(d_model)
        self.distil = ConvLayer(d_model)
        self.projection = nn.Linear(d_model * (SEQ_LEN // 2), PRED_LEN * CHANNELS)

    def forward(self, x):
        h = self.dropout(self.value_embedding(x) + self.position_embedding(x))
        h = self.norm1(h + self.dropout(self.attention(h)))
        h = self.distil(h)
        return self.projection(h.flatten(1)).view(-1, PRED_LEN, CHANNELS)


# --- DeepAR ---------------------------------------------------------------------------------------


class DeepAR(nn.Module):
    def __init__(self, hidden=8, num_layers=2, likelihood="normal"):
        super().__init__()
        self.likelihood = likelihood
        self.lstm = nn.LSTM(
            input_size=1 + 2, hidden_size=hidden, num_layers=num_layers, dropout=DROPOUT, batch_first=True
        )
        self.distribution_mu = nn.Linear(hidden, 1)
        self.distribution_presigma = nn.Linear(hidden, 1)

    def forward(self, lagged, covariates, hidden=None):
        output, hidden = self.lstm(torch.cat([lagged, covariates], dim=-1), hidden)
        return self.distribution_mu(output).squeeze(-1), self.distribution_presigma(output).squeeze(-1), hidden

    def distribution(self, mu, presigma, scale):
        if self.likelihood == "normal":
            return distributions.Normal(mu * scale, F.softplus(presigma) * scale)
        mean = F.softplus(mu) * scale
        alpha = F.softplus(presigma) / scale.sqrt()
        return distributions.NegativeBinomial(total_count=1 / alpha, probs=mean * alpha / (1 + mean * alpha))


def deepar_step(model, target, covariates):
    """The one-step-ahead likelihood over the window, the lagged target (scaled per series, DeepAR's
    ``v = 1 + mean``) as the LSTM's input: the training pass of GluonTS / pytorch-forecasting."""
    scale = (
        (1 + target.abs().mean(dim=1, keepdim=True))
        if model.likelihood == "negbin"
        else (target.std(dim=1, keepdim=True) + 1)
    )
    lagged = (target[:, :-1] / scale).unsqueeze(-1)
    mu, presigma, _ = model(lagged, covariates[:, 1:])
    dist = model.distribution(mu, presigma, scale)
    return -dist.log_prob(target[:, 1:]).mean(), dist


# --- seq2seq with teacher forcing -----------------------------------------------------------------


class Seq2Seq(nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.encoder = nn.GRU(CHANNELS, hidden, batch_first=True)
        self.decoder = nn.GRUCell(CHANNELS, hidden)
        self.out = nn.Linear(hidden, CHANNELS)

    def forward(self, src, trg=None, teacher_forcing_ratio=0.5):
        batch_size = src.shape[0]
        outputs = torch.zeros(batch_size, PRED_LEN, CHANNELS, device=src.device)
        _, hidden = self.encoder(src)
        hidden = hidden[0]
        decoder_input = src[:, -1, :]
        for t in range(PRED_LEN):
            hidden = self.decoder(decoder_input, hidden)
            output = self.out(hidden)
            outputs[:, t] = output
            teacher_force = trg is not None and torch.rand(1).item() < teacher_forcing_ratio
            decoder_input = trg[:, t] if teacher_force else output
        return outputs


def build():
    torch.manual_seed(0)
    if MODEL == "tcn":
        return TCNForecaster()
    if MODEL == "patchtst":
        return PatchTST()
    if MODEL == "informer":
        return Informer()
    if MODEL == "deepar":
        return DeepAR(likelihood=LIKELIHOOD)
    return Seq2Seq()


def _train_deepar(model, steps, device, record):
    rng = np.random.default_rng(1)
    t = np.arange(SEQ_LEN + PRED_LEN)
    covariates = np.stack([np.sin(2 * np.pi * t / 7), np.cos(2 * np.pi * t / 7)], -1)
    covariates = torch.tensor(np.broadcast_to(covariates, (BATCH, *covariates.shape)).copy(), dtype=torch.float32)
    level = rng.uniform(2, 6, (BATCH, 1))
    if model.likelihood == "negbin":
        target = torch.tensor(rng.poisson(level * (1.5 + np.sin(2 * np.pi * t / 7))), dtype=torch.float32)
    else:
        target = torch.tensor(
            level * np.sin(2 * np.pi * t / 7) + 0.1 * rng.standard_normal(t.shape), dtype=torch.float32
        )
    target, covariates = target.to(device), covariates.to(device)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        model.train()
        optimizer.zero_grad()
        loss, _ = deepar_step(model, target, covariates)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        record["losses"].append(loss.item())
        model.eval()
        with torch.no_grad():
            nll, dist = deepar_step(model, target, covariates)
            record["eval"].append([nll.item(), F.l1_loss(dist.mean, target[:, 1:]).item()])
            if model.likelihood == "normal":
                record["q90"] = dist.icdf(torch.tensor(0.9))[:, -1].tolist()
            else:
                record["variance"] = dist.variance[:, -1].tolist()


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    record = {"losses": [], "eval": []}
    if MODEL == "deepar":
        _train_deepar(model, steps, device, record)
        return record
    x, y = make_windows(make_series())
    x, y = x.to(device), y.to(device)
    x_train, y_train, x_val, y_val = x[:BATCH], y[:BATCH], x[BATCH:], y[BATCH:]
    if MODEL == "patchtst":
        optimizer = optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
        scheduler = lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=steps, pct_start=0.3)
    elif MODEL == "informer":
        # Adam would turn the rounding noise of gradients that are zero in exact arithmetic (the key
        # projection's bias under softmax, LayerNorm's and the convolution's biases before BatchNorm) into
        # lr-sized steps of either sign, which no two libraries (nor PyTorch on two devices) agree on.
        optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
        scheduler = lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
    else:
        optimizer = optim.Adam(model.parameters(), lr=2e-3)
        scheduler = None
    criterion = nn.MSELoss()
    torch.manual_seed(1)  # teacher forcing draws torch.rand(1), ProbSparse attention torch.randint
    for _ in range(steps):
        model.train()
        optimizer.zero_grad()
        pred = model(x_train, y_train) if MODEL == "seq2seq" else model(x_train)
        loss = criterion(pred, y_train)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        record["losses"].append(loss.item())
        model.eval()
        with torch.no_grad():
            pred = model(x_val)
            record["eval"].append([F.mse_loss(pred, y_val).item(), (pred - y_val).abs().mean().item()])
    record["grad_norms"] = [p.grad.norm().item() for p in model.parameters() if p.grad is not None]
    return record


if __name__ == "__main__":
    print(train(build()))
