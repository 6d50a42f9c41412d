"""A Conformer speech recogniser trained with CTC on synthetic tone sequences, its front end written
the way torchaudio writes ``Spectrogram``/``MelScale``/``AmplitudeToDB``/SpecAugment and its encoder
the way ESPnet and WeNet write theirs.

Idioms: ``torch.stft(..., window=self.window, center=True, pad_mode="reflect", return_complex=True)``
over a ``torch.hann_window`` buffer, ``spec.abs().pow(2.0)``; the HTK mel filterbank
(``2595.0 * math.log10(...)``, ``700.0 * (10.0 ** (mels / 2595.0) - 1.0)``, slopes by ``unsqueeze``
broadcasts, ``torch.max(zero, torch.min(down, up))``) applied by ``torch.matmul(spec.transpose(-1,
-2), fb)``; ``10 * torch.log10(torch.clamp(x, min=amin))`` with ``top_db`` by ``amax(dim=(-3, -2,
-1))``; SpecAugment's iid masks (``torch.rand`` widths and starts, ``.long()[..., None, None]``,
``masked_fill`` of an ``arange`` comparison); utterance mean/variance normalisation over lengths;
ESPnet's ``make_pad_mask`` (``seq_range_expand.new(lengths)``), ``Conv2dSubsampling`` (``view(b, t, c
* f)``, masks by ``x_mask[:, :, :-2:2]``), ``RelPositionalEncoding`` (``torch.flip`` of the positive
half, a cached ``pe`` extended on demand), ``RelPositionMultiHeadedAttention`` (``pos_bias_u``/``_v``
from the legacy ``torch.Tensor(h, d_k)`` with ``xavier_uniform_``, ``rel_shift`` by a zero column,
``view`` of a sliced tensor and ``view_as``, ``masked_fill(mask, torch.finfo(dtype).min)`` then
``masked_fill(mask, 0.0)`` after softmax), the macaron feed-forwards with ``ff_scale = 0.5`` and
Swish, the convolution module (pointwise ``Conv1d`` → ``F.glu(dim=1)`` → depthwise ``Conv1d(groups=
channels)`` → ``BatchNorm1d``, padding zeroed by ``masked_fill_(~mask_pad, 0.0)``); CTC over
concatenated targets (``torch.cat([y[y != ignore_id] for y in ys_pad])``,
``nn.CTCLoss(reduction="sum", zero_infinity=True)`` divided by the batch); ``pad_sequence(...,
padding_value=-1)``; ESPnet's ``WarmupLR``; ``clip_grad_norm_`` returning a norm checked with
``math.isfinite``; greedy CTC decoding (``topk(1, dim=2)``, ``masked_fill_`` of the padding, blanks and
repeats removed) and an edit distance.
"""

from __future__ import annotations

import math

import numpy as np
from shim import F, nn, optim, torch

DROPOUT = 0.1
SPEC_AUGMENT = True
SAMPLE_RATE, N_FFT, HOP, N_MELS = 1600, 128, 32, 20
D_MODEL, HEADS, FFN, LAYERS, KERNEL = 16, 2, 32, 2, 7
VOCAB, BLANK, IGNORE_ID = 6, 0, -1  # tokens 1..5 are tones; 0 is CTC's blank


# --- torchaudio/functional/functional.py and transforms ---


def _hz_to_mel(freq: float, mel_scale: str = "htk") -> float:
    if mel_scale not in ["slaney", "htk"]:
        raise ValueError('mel_scale should be one of "htk" or "slaney".')
    if mel_scale == "htk":
        return 2595.0 * math.log10(1.0 + (freq / 700.0))
    raise NotImplementedError


def _mel_to_hz(mels, mel_scale: str = "htk"):
    if mel_scale == "htk":
        return 700.0 * (10.0 ** (mels / 2595.0) - 1.0)
    raise NotImplementedError


def _create_triangular_filterbank(all_freqs, f_pts):
    # Adopted from Librosa
    # calculate the difference between each filter mid point and each stft freq point in hertz
    f_diff = f_pts[1:] - f_pts[:-1]  # (n_filter + 1)
    slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)  # (n_freqs, n_filter + 2)
    # create overlapping triangles
    zero = torch.zeros(1)
    down_slopes = (-1.0 * slopes[:, :-2]) / f_diff[:-1]  # (n_freqs, n_filter)
    up_slopes = slopes[:, 2:] / f_diff[1:]  # (n_freqs, n_filter)
    fb = torch.max(zero, torch.min(down_slopes, up_slopes))
    return fb


def melscale_fbanks(n_freqs, f_min, f_max, n_mels, sample_rate, norm=None, mel_scale="htk"):
    # freq bins
    all_freqs = torch.linspace(0, sample_rate // 2, n_freqs)

    # calculate mel freq bins
    m_min = _hz_to_mel(f_min, mel_scale=mel_scale)
    m_max = _hz_to_mel(f_max, mel_scale=mel_scale)

    m_pts = torch.linspace(m_min, m_max, n_mels + 2)
    f_pts = _mel_to_hz(m_pts, mel_scale=mel_scale)

    # create filterbank
    fb = _create_triangular_filterbank(all_freqs, f_pts)

    if norm is not None and norm == "slaney":
        # Slaney-style mel is scaled to be approx constant energy per channel
        enorm = 2.0 / (f_pts[2 : n_mels + 2] - f_pts[:n_mels])
        fb *= enorm.unsqueeze(0)
    return fb


def spectrogram(waveform, pad, window, n_fft, hop_length, win_length, power, normalized, center=True,
                pad_mode="reflect", onesided=True):  # fmt: skip
    if pad > 0:
        waveform = torch.nn.functional.pad(waveform, (pad, pad), "constant")

    # pack batch
    shape = waveform.size()
    waveform = waveform.reshape(-1, shape[-1])

    # default values are consistent with librosa.core.spectrum._spectrogram
    spec_f = torch.stft(
        input=waveform,
        n_fft=n_fft,
        hop_length=hop_length,
        win_length=win_length,
        window=window,
        center=center,
        pad_mode=pad_mode,
        normalized=False,
        onesided=onesided,
        return_complex=True,
    )

    # unpack batch
    spec_f = spec_f.reshape(shape[:-1] + spec_f.shape[-2:])

    if normalized:
        spec_f /= window.pow(2.0).sum().sqrt()
    if power is not None:
        if power == 1.0:
            return spec_f.abs()
        return spec_f.abs().pow(power)
    return spec_f


class Spectrogram(nn.Module):
    def __init__(self, n_fft=400, win_length=None, hop_length=None, pad=0, window_fn=torch.hann_window, power=2.0,
                 normalized=False, wkwargs=None, center=True, pad_mode="reflect", onesided=True):  # fmt: skip
        super().__init__()
        self.n_fft = n_fft
        # number of FFT bins. the returned STFT result will have n_fft // 2 + 1
        # number of frequencies due to onesided=True in torch.stft
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 2
        window = window_fn(self.win_length) if wkwargs is None else window_fn(self.win_length, **wkwargs)
        self.register_buffer("window", window)
        self.pad = pad
        self.power = power
        self.normalized = normalized
        self.center = center
        self.pad_mode = pad_mode
        self.onesided = onesided

    def forward(self, waveform):
        return spectrogram(waveform, self.pad, self.window, self.n_fft, self.hop_length, self.win_length, self.power,
                           self.normalized, self.center, self.pad_mode, self.onesided)  # fmt: skip


class MelScale(nn.Module):
    def __init__(self, n_mels=128, sample_rate=16000, f_min=0.0, f_max=None, n_stft=201, norm=None, mel_scale="htk"):
        super().__init__()
        self.n_mels = n_mels
        self.sample_rate = sample_rate
        self.f_max = f_max if f_max is not None else float(sample_rate // 2)
        self.f_min = f_min
        fb = melscale_fbanks(n_stft, self.f_min, self.f_max, self.n_mels, self.sample_rate, norm, mel_scale)
        self.register_buffer("fb", fb)

    def forward(self, specgram):
        # (..., time, freq) dot (freq, n_mels) -> (..., n_mels, time)
        mel_specgram = torch.matmul(specgram.transpose(-1, -2), self.fb).transpose(-1, -2)
        return mel_specgram


class MelSpectrogram(nn.Module):
    def __init__(self, sample_rate=16000, n_fft=400, hop_length=None, n_mels=128, norm=None, mel_scale="htk"):
        super().__init__()
        self.spectrogram = Spectrogram(n_fft=n_fft, hop_length=hop_length, power=2.0)
        self.mel_scale = MelScale(n_mels, sample_rate, 0.0, None, n_fft // 2 + 1, norm, mel_scale)

    def forward(self, waveform):
        specgram = self.spectrogram(waveform)
        mel_specgram = self.mel_scale(specgram)
        return mel_specgram


def amplitude_to_DB(x, multiplier, amin, db_multiplier, top_db=None):
    x_db = multiplier * torch.log10(torch.clamp(x, min=amin))
    x_db -= multiplier * db_multiplier

    if top_db is not None:
        # Expand batch
        shape = x_db.size()
        packed_channels = shape[-3] if x_db.dim() > 2 else 1
        x_db = x_db.reshape(-1, packed_channels, shape[-2], shape[-1])

        x_db = torch.max(x_db, (x_db.amax(dim=(-3, -2, -1)) - top_db).view(-1, 1, 1, 1))

        # Repack batch
        x_db = x_db.reshape(shape)

    return x_db


class AmplitudeToDB(nn.Module):
    def __init__(self, stype="power", top_db=None):
        super().__init__()
        self.stype = stype
        if top_db is not None and top_db < 0:
            raise ValueError("top_db must be positive value")
        self.top_db = top_db
        self.multiplier = 10.0 if stype == "power" else 20.0
        self.amin = 1e-10
        self.ref_value = 1.0
        self.db_multiplier = math.log10(max(self.amin, self.ref_value))

    def forward(self, x):
        return amplitude_to_DB(x, self.multiplier, self.amin, self.db_multiplier, self.top_db)


def mask_along_axis_iid(specgrams, mask_param, mask_value, axis):
    dim = specgrams.dim()
    if axis not in [dim - 2, dim - 1]:
        raise ValueError(f"Only Frequency and Time masking are supported (axis {dim - 2} and axis {dim - 1}).")
    if mask_param < 1:
        return specgrams

    device = specgrams.device
    dtype = specgrams.dtype

    value = torch.rand(specgrams.shape[: (dim - 2)], device=device, dtype=dtype) * mask_param
    min_value = torch.rand(specgrams.shape[: (dim - 2)], device=device, dtype=dtype) * (specgrams.size(axis) - value)

    # Create broadcastable mask
    mask_start = min_value.long()[..., None, None]
    mask_end = (min_value.long() + value.long())[..., None, None]
    mask = torch.arange(0, specgrams.size(axis), device=device, dtype=dtype)

    # Per batch example masking
    specgrams = specgrams.transpose(axis, -1)
    specgrams = specgrams.masked_fill((mask >= mask_start) & (mask < mask_end), mask_value)
    specgrams = specgrams.transpose(axis, -1)

    return specgrams


# --- espnet/nets/pytorch_backend ---


def make_pad_mask(lengths, maxlen):
    batch_size = lengths.size(0)
    seq_range = torch.arange(0, maxlen, dtype=torch.int64)
    seq_range_expand = seq_range.unsqueeze(0).expand(batch_size, maxlen)
    seq_length_expand = seq_range_expand.new(lengths).unsqueeze(-1)
    mask = seq_range_expand >= seq_length_expand
    return mask


class Swish(nn.Module):
    """Construct an Swish object."""

    def forward(self, x):
        return x * torch.sigmoid(x)


class RelPositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout_rate, max_len=5000):
        super().__init__()
        self.d_model = d_model
        self.xscale = math.sqrt(self.d_model)
        self.dropout = nn.Dropout(p=dropout_rate)
        self.pe = None
        self.extend_pe(torch.tensor(0.0).expand(1, max_len))

    def extend_pe(self, x):
        """Reset the positional encodings."""
        if self.pe is not None:
            # self.pe contains both positive and negative parts
            # the length of self.pe is 2 * input_len - 1
            if self.pe.size(1) >= x.size(1) * 2 - 1:
                if self.pe.dtype != x.dtype or self.pe.device != x.device:
                    self.pe = self.pe.to(dtype=x.dtype, device=x.device)
                return
        # Suppose `i` means to the position of query vecotr and `j` means the
        # position of key vector. We use position relative positions when keys
        # are to the left (i>j) and negative relative positions otherwise (i<j).
        pe_positive = torch.zeros(x.size(1), self.d_model)
        pe_negative = torch.zeros(x.size(1), self.d_model)
        position = torch.arange(0, x.size(1), dtype=torch.float32).unsqueeze(1)
        div_term = torch.exp(
            torch.arange(0, self.d_model, 2, dtype=torch.float32) * -(math.log(10000.0) / self.d_model)
        )
        pe_positive[:, 0::2] = torch.sin(position * div_term)
        pe_positive[:, 1::2] = torch.cos(position * div_term)
        pe_negative[:, 0::2] = torch.sin(-1 * position * div_term)
        pe_negative[:, 1::2] = torch.cos(-1 * position * div_term)

        # Reserve the order of positive indices and concat both positive and
        # negative indices. This is used to support the shifting trick
        # as in https://arxiv.org/abs/1901.02860
        pe_positive = torch.flip(pe_positive, [0]).unsqueeze(0)
        pe_negative = pe_negative[1:].unsqueeze(0)
        pe = torch.cat([pe_positive, pe_negative], dim=1)
        self.pe = pe.to(device=x.device, dtype=x.dtype)

    def forward(self, x):
        self.extend_pe(x)
        x = x * self.xscale
        pos_emb = self.pe[:, self.pe.size(1) // 2 - x.size(1) + 1 : self.pe.size(1) // 2 + x.size(1)]
        return self.dropout(x), self.dropout(pos_emb)


class Conv2dSubsampling(nn.Module):
    """Convolutional 2D subsampling (to 1/4 length)."""

    def __init__(self, idim, odim, dropout_rate, pos_enc=None):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, odim, 3, 2), nn.ReLU(), nn.Conv2d(odim, odim, 3, 2), nn.ReLU())
        self.out = nn.Sequential(
            nn.Linear(odim * (((idim - 1) // 2 - 1) // 2), odim),
            pos_enc if pos_enc is not None else RelPositionalEncoding(odim, dropout_rate),
        )

    def forward(self, x, x_mask):
        x = x.unsqueeze(1)  # (b, c, t, f)
        x = self.conv(x)
        b, c, t, f = x.size()
        x = self.out(x.transpose(1, 2).contiguous().view(b, t, c * f))
        if x_mask is None:
            return x, None
        return x, x_mask[:, :, :-2:2][:, :, :-2:2]


class MultiHeadedAttention(nn.Module):
    def __init__(self, n_head, n_feat, dropout_rate):
        super().__init__()
        assert n_feat % n_head == 0
        # We assume d_v always equals d_k
        self.d_k = n_feat // n_head
        self.h = n_head
        self.linear_q = nn.Linear(n_feat, n_feat)
        self.linear_k = nn.Linear(n_feat, n_feat)
        self.linear_v = nn.Linear(n_feat, n_feat)
        self.linear_out = nn.Linear(n_feat, n_feat)
        self.attn = None
        self.dropout = nn.Dropout(p=dropout_rate)

    def forward_qkv(self, query, key, value):
        n_batch = query.size(0)
        q = self.linear_q(query).view(n_batch, -1, self.h, self.d_k)
        k = self.linear_k(key).view(n_batch, -1, self.h, self.d_k)
        v = self.linear_v(value).view(n_batch, -1, self.h, self.d_k)
        q = q.transpose(1, 2)  # (batch, head, time1, d_k)
        k = k.transpose(1, 2)  # (batch, head, time2, d_k)
        v = v.transpose(1, 2)  # (batch, head, time2, d_k)
        return q, k, v

    def forward_attention(self, value, scores, mask):
        n_batch = value.size(0)
        if mask is not None:
            mask = mask.unsqueeze(1).eq(0)  # (batch, 1, *, time2)
            min_value = torch.finfo(scores.dtype).min
            scores = scores.masked_fill(mask, min_value)
            self.attn = torch.softmax(scores, dim=-1).masked_fill(mask, 0.0)  # (batch, head, time1, time2)
        else:
            self.attn = torch.softmax(scores, dim=-1)  # (batch, head, time1, time2)

        p_attn = self.dropout(self.attn)
        x = torch.matmul(p_attn, value)  # (batch, head, time1, d_k)
        x = x.transpose(1, 2).contiguous().view(n_batch, -1, self.h * self.d_k)  # (batch, time1, d_model)
        return self.linear_out(x)  # (batch, time1, d_model)


class RelPositionMultiHeadedAttention(MultiHeadedAttention):
    def __init__(self, n_head, n_feat, dropout_rate, zero_triu=False):
        super().__init__(n_head, n_feat, dropout_rate)
        self.zero_triu = zero_triu
        # linear transformation for positional encoding
        self.linear_pos = nn.Linear(n_feat, n_feat, bias=False)
        # these two learnable bias are used in matrix c and matrix d
        # as described in https://arxiv.org/abs/1901.02860 Section 3.3
        self.pos_bias_u = nn.Parameter(torch.Tensor(self.h, self.d_k))
        self.pos_bias_v = nn.Parameter(torch.Tensor(self.h, self.d_k))
        torch.nn.init.xavier_uniform_(self.pos_bias_u)
        torch.nn.init.xavier_uniform_(self.pos_bias_v)

    def rel_shift(self, x):
        """Compute relative positional encoding."""
        zero_pad = torch.zeros((*x.size()[:3], 1), device=x.device, dtype=x.dtype)
        x_padded = torch.cat([zero_pad, x], dim=-1)

        x_padded = x_padded.view(*x.size()[:2], x.size(3) + 1, x.size(2))
        x = x_padded[:, :, 1:].view_as(x)[:, :, :, : x.size(-1) // 2 + 1]  # only keep the positions from 0 to time2

        if self.zero_triu:
            ones = torch.ones((x.size(2), x.size(3)), device=x.device)
            x = x * torch.tril(ones, x.size(3) - x.size(2))[None, None, :, :]

        return x

    def forward(self, query, key, value, pos_emb, mask):
        q, k, v = self.forward_qkv(query, key, value)
        q = q.transpose(1, 2)  # (batch, time1, head, d_k)

        n_batch_pos = pos_emb.size(0)
        p = self.linear_pos(pos_emb).view(n_batch_pos, -1, self.h, self.d_k)
        p = p.transpose(1, 2)  # (batch, head, 2*time1-1, d_k)

        # (batch, head, time1, d_k)
        q_with_bias_u = (q + self.pos_bias_u).transpose(1, 2)
        # (batch, head, time1, d_k)
        q_with_bias_v = (q + self.pos_bias_v).transpose(1, 2)

        # compute attention score
        # first compute matrix a and matrix c
        # as described in https://arxiv.org/abs/1901.02860 Section 3.3
        # (batch, head, time1, time2)
        matrix_ac = torch.matmul(q_with_bias_u, k.transpose(-2, -1))

        # compute matrix b and matrix d
        # (batch, head, time1, 2*time1-1)
        matrix_bd = torch.matmul(q_with_bias_v, p.transpose(-2, -1))
        matrix_bd = self.rel_shift(matrix_bd)

        scores = (matrix_ac + matrix_bd) / math.sqrt(self.d_k)  # (batch, head, time1, time2)

        return self.forward_attention(v, scores, mask)


class PositionwiseFeedForward(nn.Module):
    def __init__(self, idim, hidden_units, dropout_rate, activation=nn.ReLU()):  # noqa: B008 (as ESPnet writes it)
        super().__init__()
        self.w_1 = nn.Linear(idim, hidden_units)
        self.w_2 = nn.Linear(hidden_units, idim)
        self.dropout = nn.Dropout(dropout_rate)
        self.activation = activation

    def forward(self, x):
        return self.w_2(self.dropout(self.activation(self.w_1(x))))


class ConvolutionModule(nn.Module):
    """ConvolutionModule in Conformer model (WeNet's, with the padding masked)."""

    def __init__(self, channels, kernel_size, activation=nn.ReLU(), bias=True):  # noqa: B008
        super().__init__()
        assert (kernel_size - 1) % 2 == 0
        self.pointwise_conv1 = nn.Conv1d(channels, 2 * channels, kernel_size=1, stride=1, padding=0, bias=bias)
        self.depthwise_conv = nn.Conv1d(channels, channels, kernel_size, stride=1, padding=(kernel_size - 1) // 2,
                                        groups=channels, bias=bias)  # fmt: skip
        self.norm = nn.BatchNorm1d(channels)
        self.pointwise_conv2 = nn.Conv1d(channels, channels, kernel_size=1, stride=1, padding=0, bias=bias)
        self.activation = activation

    def forward(self, x, mask_pad):
        # exchange the temporal dimension and the feature dimension
        x = x.transpose(1, 2)  # (#batch, channels, time)
        # mask batch padding
        if mask_pad.size(2) > 0:  # time > 0
            x.masked_fill_(~mask_pad, 0.0)

        # GLU mechanism
        x = self.pointwise_conv1(x)  # (batch, 2*channel, dim)
        x = nn.functional.glu(x, dim=1)  # (batch, channel, dim)

        # 1D Depthwise Conv
        x = self.depthwise_conv(x)
        x = self.activation(self.norm(x))
        x = self.pointwise_conv2(x)
        # mask batch padding
        if mask_pad.size(2) > 0:  # time > 0
            x.masked_fill_(~mask_pad, 0.0)

        return x.transpose(1, 2)


class EncoderLayer(nn.Module):
    def __init__(self, size, self_attn, feed_forward, feed_forward_macaron, conv_module, dropout_rate):
        super().__init__()
        self.self_attn = self_attn
        self.feed_forward = feed_forward
        self.feed_forward_macaron = feed_forward_macaron
        self.conv_module = conv_module
        self.norm_ff = nn.LayerNorm(size)  # for the FNN module
        self.norm_mha = nn.LayerNorm(size)  # for the MHA module
        if feed_forward_macaron is not None:
            self.norm_ff_macaron = nn.LayerNorm(size)
            self.ff_scale = 0.5
        else:
            self.ff_scale = 1.0
        if self.conv_module is not None:
            self.norm_conv = nn.LayerNorm(size)  # for the CNN module
            self.norm_final = nn.LayerNorm(size)  # for the final output of the block
        self.dropout = nn.Dropout(dropout_rate)
        self.size = size

    def forward(self, x_input, mask):
        x, pos_emb = x_input

        # whether to use macaron style
        if self.feed_forward_macaron is not None:
            residual = x
            x = self.norm_ff_macaron(x)
            x = residual + self.ff_scale * self.dropout(self.feed_forward_macaron(x))

        # multi-headed self-attention module
        residual = x
        x = self.norm_mha(x)
        x_att = self.self_attn(x, x, x, pos_emb, mask)
        x = residual + self.dropout(x_att)

        # convolution module
        if self.conv_module is not None:
            residual = x
            x = self.norm_conv(x)
            x = residual + self.dropout(self.conv_module(x, mask))

        # feed forward module
        residual = x
        x = self.norm_ff(x)
        x = residual + self.ff_scale * self.dropout(self.feed_forward(x))

        if self.conv_module is not None:
            x = self.norm_final(x)

        return (x, pos_emb), mask


class ConformerEncoder(nn.Module):
    def __init__(self, idim, attention_dim=D_MODEL, attention_heads=HEADS, linear_units=FFN, num_blocks=LAYERS,
                 dropout_rate=0.1, cnn_module_kernel=KERNEL):  # fmt: skip
        super().__init__()
        self.embed = Conv2dSubsampling(
            idim, attention_dim, dropout_rate, RelPositionalEncoding(attention_dim, dropout_rate)
        )
        self.encoders = nn.ModuleList(
            [
                EncoderLayer(
                    attention_dim,
                    RelPositionMultiHeadedAttention(attention_heads, attention_dim, dropout_rate),
                    PositionwiseFeedForward(attention_dim, linear_units, dropout_rate, Swish()),
                    PositionwiseFeedForward(attention_dim, linear_units, dropout_rate, Swish()),
                    # no conv biases, as torchaudio's _ConvolutionModule: the depthwise bias before BatchNorm
                    # only feeds the running mean, and Adam turns its round-off gradient into full steps
                    ConvolutionModule(attention_dim, cnn_module_kernel, Swish(), bias=False),
                    dropout_rate,
                )
                for _ in range(num_blocks)
            ]
        )
        self.after_norm = nn.LayerNorm(attention_dim)

    def forward(self, xs, masks):
        xs, masks = self.embed(xs, masks)
        for layer in self.encoders:
            xs, masks = layer(xs, masks)
        if isinstance(xs, tuple):
            xs = xs[0]
        return self.after_norm(xs), masks


class CTC(nn.Module):
    def __init__(self, odim, eprojs, dropout_rate):
        super().__init__()
        self.dropout_rate = dropout_rate
        self.ctc_lo = nn.Linear(eprojs, odim)
        self.ctc_loss = nn.CTCLoss(reduction="sum", zero_infinity=True)

    def forward(self, hs_pad, hlens, ys_pad):
        ys = [y[y != IGNORE_ID] for y in ys_pad]  # parse padded ys
        ys_hat = self.ctc_lo(F.dropout(hs_pad, p=self.dropout_rate, training=self.training))
        olens = torch.tensor([len(y) for y in ys], dtype=torch.long)
        ys_true = torch.cat(ys)
        ys_hat = ys_hat.transpose(0, 1).log_softmax(2)  # (T, B, V)
        loss = self.ctc_loss(ys_hat, ys_true, hlens, olens)
        return loss / ys_hat.size(1)

    def log_softmax(self, hs_pad):
        return F.log_softmax(self.ctc_lo(hs_pad), dim=2)


class ASRModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.frontend = MelSpectrogram(sample_rate=SAMPLE_RATE, n_fft=N_FFT, hop_length=HOP, n_mels=N_MELS)
        self.amplitude_to_db = AmplitudeToDB(top_db=80.0)
        self.encoder = ConformerEncoder(N_MELS, dropout_rate=DROPOUT)
        self.ctc = CTC(VOCAB, D_MODEL, DROPOUT)

    def extract_features(self, speech, speech_lengths):
        with torch.no_grad():
            feats = self.amplitude_to_db(self.frontend(speech))  # (B, n_mels, T)
            feat_lengths = speech_lengths // HOP + 1  # center=True frames
            if SPEC_AUGMENT and self.training:
                feats = mask_along_axis_iid(feats, mask_param=4, mask_value=0.0, axis=1)
                feats = mask_along_axis_iid(feats, mask_param=5, mask_value=0.0, axis=2)
            feats = feats.transpose(1, 2)  # (B, T, n_mels)
            # utterance-level mean/variance normalisation over the valid frames
            mask = ~make_pad_mask(feat_lengths, feats.size(1))
            valid = mask.unsqueeze(-1).to(feats.dtype)
            count = valid.sum(dim=1, keepdim=True)
            mean = (feats * valid).sum(dim=1, keepdim=True) / count
            var = ((feats - mean).pow(2) * valid).sum(dim=1, keepdim=True) / count
            feats = ((feats - mean) / torch.sqrt(var + 1e-5)).masked_fill(~mask.unsqueeze(-1), 0.0)
        return feats, feat_lengths

    def forward(self, speech, speech_lengths, text):
        feats, feat_lengths = self.extract_features(speech, speech_lengths)
        masks = (~make_pad_mask(feat_lengths, feats.size(1))[:, None, :]).to(feats.device)
        hs_pad, hs_mask = self.encoder(feats, masks)
        hlens = hs_mask.squeeze(1).sum(1)
        loss = self.ctc(hs_pad, hlens, text)
        return loss, hs_pad, hlens


class WarmupLR(optim.lr_scheduler.LRScheduler):
    """ESPnet's WarmupLR: the Noam schedule without its model-size factor."""

    def __init__(self, optimizer, warmup_steps=25000, last_epoch=-1):
        self.warmup_steps = warmup_steps
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        step_num = self.last_epoch + 1
        return [
            lr * self.warmup_steps**0.5 * min(step_num**-0.5, step_num * self.warmup_steps**-1.5)
            for lr in self.base_lrs
        ]


def remove_duplicates_and_blank(hyp):
    new_hyp = []
    cur = 0
    while cur < len(hyp):
        if hyp[cur] != BLANK:
            new_hyp.append(hyp[cur])
        prev = cur
        while cur < len(hyp) and hyp[cur] == hyp[prev]:
            cur += 1
    return new_hyp


def edit_distance(a, b):
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


def ctc_greedy_search(model, speech, speech_lengths):
    feats, feat_lengths = model.extract_features(speech, speech_lengths)
    masks = ~make_pad_mask(feat_lengths, feats.size(1))[:, None, :]
    encoder_out, encoder_mask = model.encoder(feats, masks)
    maxlen = encoder_out.size(1)
    encoder_out_lens = encoder_mask.squeeze(1).sum(1)
    ctc_probs = model.ctc.log_softmax(encoder_out)  # (B, maxlen, vocab_size)
    topk_prob, topk_index = ctc_probs.topk(1, dim=2)  # (B, maxlen, 1)
    topk_index = topk_index.view(speech.size(0), maxlen)  # (B, maxlen)
    mask = make_pad_mask(encoder_out_lens, maxlen)  # (B, maxlen)
    topk_index = topk_index.masked_fill_(mask, VOCAB - 1)  # (B, maxlen)
    hyps = [hyp.tolist() for hyp in topk_index]
    scores = topk_prob.max(1)
    hyps = [remove_duplicates_and_blank(hyp[: int(n)]) for hyp, n in zip(hyps, encoder_out_lens)]
    return hyps, scores[0].squeeze(-1)


def build():
    torch.manual_seed(0)
    return ASRModel()


def make_batch(seed=0, batch=3):
    """Utterances of 2-3 tones (token k is a tone of 100 k Hz), zero-padded, and their token ids."""
    rng = np.random.default_rng(seed)
    segment = 6 * HOP
    waves, texts = [], []
    for _ in range(batch):
        tokens = rng.integers(1, VOCAB, size=int(rng.integers(2, 4)))
        t = np.arange(segment) / SAMPLE_RATE
        wave = np.concatenate([0.5 * np.sin(2 * np.pi * 100 * k * t) for k in tokens])
        wave += rng.normal(0, 0.01, size=wave.shape)
        waves.append(wave.astype(np.float32))
        texts.append(torch.from_numpy(tokens))
    lengths = np.array([len(w) for w in waves])
    speech = np.zeros((batch, lengths.max()), dtype=np.float32)
    for row, wave in enumerate(waves):
        speech[row, : len(wave)] = wave
    text = nn.utils.rnn.pad_sequence(texts, batch_first=True, padding_value=IGNORE_ID)
    return torch.from_numpy(speech), torch.from_numpy(lengths), text


def train(model, steps=3):
    torch.manual_seed(1)  # SpecAugment's draws
    speech, speech_lengths, text = make_batch()
    optimizer = optim.Adam(model.parameters(), lr=2e-3, betas=(0.9, 0.98), eps=1e-9)
    scheduler = WarmupLR(optimizer, warmup_steps=2)
    losses, grad_norms = [], []
    model.train()
    for _ in range(steps):
        loss, _, hlens = model(speech, speech_lengths, text)
        optimizer.zero_grad()
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
        if not math.isfinite(grad_norm):
            print(f"grad norm is not finite: {grad_norm}")
        else:
            optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        grad_norms.append(float(grad_norm))
    model.eval()
    with torch.no_grad():
        hyps, scores = ctc_greedy_search(model, speech, speech_lengths)
        feats, _ = model.extract_features(speech, speech_lengths)
    refs = [[int(t) for t in row if t != IGNORE_ID] for row in text.tolist()]
    errors = sum(edit_distance(h, r) for h, r in zip(hyps, refs))
    return {
        "losses": losses,
        "grad_norms": grad_norms,
        "lr": scheduler.get_last_lr()[0],
        "hlens": hlens.tolist(),
        "cer": errors / sum(len(r) for r in refs),
        "scores": scores.tolist(),
        "feats": feats[:, :4, :4].flatten().tolist(),
        "running_var": model.encoder.encoders[0].conv_module.norm.running_var[:4].tolist(),
    }


if __name__ == "__main__":
    print(train(build(), steps=20))
