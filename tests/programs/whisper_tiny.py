"""A tiny Whisper speech recogniser fine-tuned and decoded, written the way openai/whisper's ``model.py``,
``audio.py`` and ``decoding.py`` write it.

Idioms: ``audio.py``'s ``pad_or_trim`` (``array.index_select(dim=axis, index=torch.arange(length))``,
``F.pad(array, [pad for sizes in pad_widths[::-1] for pad in sizes])``), ``mel_filters`` behind
``@lru_cache`` as ``torch.from_numpy(...)``, ``log_mel_spectrogram`` (``torch.is_tensor``, ``torch.stft`` over
``torch.hann_window(N_FFT).to(audio.device)`` with ``return_complex=True``, ``stft[..., :-1].abs() ** 2``,
``filters @ magnitudes``, ``torch.clamp(mel_spec, min=1e-10).log10()``, ``torch.maximum(log_spec,
log_spec.max() - 8.0)``); ``model.py``'s ``@dataclass ModelDimensions``; ``LayerNorm``, ``Linear`` and
``Conv1d`` subclasses casting their weights to the input's dtype (``super().forward(x.float()).type(x.dtype)``,
``F.linear(x, self.weight.to(x.dtype), ...)``, an overridden ``_conv_forward``); ``sinusoids`` by
``torch.exp(-log_timescale_increment * torch.arange(channels // 2))`` and ``[:, np.newaxis]`` broadcasting;
``MultiHeadAttention.qkv_attention`` with ``scale = (n_state // n_head) ** -0.25`` on both ``q`` and ``k``,
``q.view(*q.shape[:2], n_head, -1)``, ``qk.float()``, ``F.softmax(qk, dim=-1).to(q.dtype)``, ``flatten(
start_dim=2)``, or SDPA behind a class attribute that a ``@contextmanager`` ``disable_sdpa`` turns off
(``SDPA``); the decoder's ``torch.empty(n_ctx, n_ctx).fill_(-np.inf).triu_(1)`` mask buffer with
``persistent=False``; ``alignment_heads`` as a boolean ``to_sparse()`` buffer; the encoder's
``F.gelu(self.conv1(x))``, ``x.permute(0, 2, 1)`` and the shape ``assert``; tied output logits by ``x @
torch.transpose(self.token_embedding.weight.to(x.dtype), 0, 1)``; ``install_kv_cache_hooks`` (forward hooks
on the key and value projections returning ``torch.cat([cache[module], output], dim=1).detach()``, the
offset read by ``next(iter(kv_cache.values())).shape[1]``); ``detect_language`` (a boolean vocabulary mask
set by a list, ``logits[:, mask] = -np.inf``); greedy decoding as ``GreedyDecoder.update`` writes it
(``logprobs[torch.arange(n), next_tokens]``, ``sum_logprobs += current_logprobs * (tokens[:, -1] !=
eot)``, ``next_tokens[tokens[:, -1] == eot] = eot``) with ``SuppressBlank``/``SuppressTokens`` by
``logits[:, list] = -np.inf``, under ``torch.no_grad()``; fine-tuning by cross-entropy over -100 labels.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from shim import F, nn, optim, torch

SDPA = True
SAMPLE_RATE, N_FFT, HOP_LENGTH, N_MELS = 1600, 32, 8, 8
N_SAMPLES = 128  # 16 frames: the 30-second window, shrunk
N_FRAMES = N_SAMPLES // HOP_LENGTH
SOT, EOT, LANG_EN, LANG_DE, TRANSCRIBE, NO_TIMESTAMPS, BLANK = 1, 2, 3, 4, 5, 6, 7
N_VOCAB = 24


def pad_or_trim(array, length: int = N_SAMPLES, *, axis: int = -1):
    """
    Pad or trim the audio array to N_SAMPLES, as expected by the encoder.
    """
    if torch.is_tensor(array):
        if array.shape[axis] > length:
            array = array.index_select(dim=axis, index=torch.arange(length, device=array.device))

        if array.shape[axis] < length:
            pad_widths = [(0, 0)] * array.ndim
            pad_widths[axis] = (0, length - array.shape[axis])
            array = F.pad(array, [pad for sizes in pad_widths[::-1] for pad in sizes])
    else:
        if array.shape[axis] > length:
            array = array.take(indices=range(length), axis=axis)

        if array.shape[axis] < length:
            pad_widths = [(0, 0)] * array.ndim
            pad_widths[axis] = (0, length - array.shape[axis])
            array = np.pad(array, pad_widths)

    return array


@lru_cache(maxsize=None)  # noqa: UP033 (as whisper writes it)
def _mel_filters_numpy(n_mels: int) -> np.ndarray:
    """A Slaney-style triangular filterbank (whisper ships librosa's in mel_filters.npz)."""
    fft_freqs = np.linspace(0, SAMPLE_RATE / 2, N_FFT // 2 + 1)
    mel_points = np.linspace(0.0, 2595.0 * np.log10(1.0 + (SAMPLE_RATE / 2) / 700.0), n_mels + 2)
    hz_points = 700.0 * (10.0 ** (mel_points / 2595.0) - 1.0)
    lower, center, upper = hz_points[:-2, None], hz_points[1:-1, None], hz_points[2:, None]
    up = (fft_freqs[None, :] - lower) / (center - lower)
    down = (upper - fft_freqs[None, :]) / (upper - center)
    weights = np.maximum(0.0, np.minimum(up, down)) * (2.0 / (upper - lower))
    return weights.astype(np.float32)


def mel_filters(device, n_mels: int):
    """
    load the mel filterbank matrix for projecting STFT into a Mel spectrogram.
    """
    return torch.from_numpy(_mel_filters_numpy(n_mels)).to(device)


def log_mel_spectrogram(audio, n_mels: int = N_MELS, padding: int = 0, device=None):
    if not torch.is_tensor(audio):
        audio = torch.from_numpy(audio)

    if device is not None:
        audio = audio.to(device)
    if padding > 0:
        audio = F.pad(audio, (0, padding))
    window = torch.hann_window(N_FFT).to(audio.device)
    stft = torch.stft(audio, N_FFT, HOP_LENGTH, window=window, return_complex=True)
    magnitudes = stft[..., :-1].abs() ** 2

    filters = mel_filters(audio.device, n_mels)
    mel_spec = filters @ magnitudes

    log_spec = torch.clamp(mel_spec, min=1e-10).log10()
    log_spec = torch.maximum(log_spec, log_spec.max() - 8.0)
    log_spec = (log_spec + 4.0) / 4.0
    return log_spec


@dataclass
class ModelDimensions:
    n_mels: int
    n_audio_ctx: int
    n_audio_state: int
    n_audio_head: int
    n_audio_layer: int
    n_vocab: int
    n_text_ctx: int
    n_text_state: int
    n_text_head: int
    n_text_layer: int


class LayerNorm(nn.LayerNorm):
    def forward(self, x):
        return super().forward(x.float()).type(x.dtype)


class Linear(nn.Linear):
    def forward(self, x):
        return F.linear(x, self.weight.to(x.dtype), None if self.bias is None else self.bias.to(x.dtype))


class Conv1d(nn.Conv1d):
    def _conv_forward(self, x, weight, bias):
        return super()._conv_forward(x, weight.to(x.dtype), None if bias is None else bias.to(x.dtype))


def sinusoids(length, channels, max_timescale=10000):
    """Returns sinusoids for positional embedding"""
    assert channels % 2 == 0
    log_timescale_increment = np.log(max_timescale) / (channels // 2 - 1)
    inv_timescales = torch.exp(-log_timescale_increment * torch.arange(channels // 2))
    scaled_time = torch.arange(length)[:, np.newaxis] * inv_timescales[np.newaxis, :]
    return torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)


@contextmanager
def disable_sdpa():
    prev_state = MultiHeadAttention.use_sdpa
    try:
        MultiHeadAttention.use_sdpa = False
        yield
    finally:
        MultiHeadAttention.use_sdpa = prev_state


class MultiHeadAttention(nn.Module):
    use_sdpa = True

    def __init__(self, n_state: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.query = Linear(n_state, n_state)
        self.key = Linear(n_state, n_state, bias=False)
        self.value = Linear(n_state, n_state)
        self.out = Linear(n_state, n_state)

    def forward(self, x, xa=None, mask=None, kv_cache=None):
        q = self.query(x)

        if kv_cache is None or xa is None or self.key not in kv_cache:
            # hooks, if installed (i.e. kv_cache is not None), will prepend the cached kv tensors;
            # otherwise, perform key/value projections for self- or cross-attention as usual.
            k = self.key(x if xa is None else xa)
            v = self.value(x if xa is None else xa)
        else:
            # for cross-attention, calculate keys and values once and reuse in subsequent calls.
            k = kv_cache[self.key]
            v = kv_cache[self.value]

        wv, qk = self.qkv_attention(q, k, v, mask)
        return self.out(wv), qk

    def qkv_attention(self, q, k, v, mask=None):
        n_batch, n_ctx, n_state = q.shape
        scale = (n_state // self.n_head) ** -0.25
        q = q.view(*q.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        k = k.view(*k.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        v = v.view(*v.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)

        if MultiHeadAttention.use_sdpa:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=mask is not None and n_ctx > 1)
            out = a.permute(0, 2, 1, 3).flatten(start_dim=2)
            qk = None
        else:
            qk = (q * scale) @ (k * scale).transpose(-1, -2)
            if mask is not None:
                qk = qk + mask[:n_ctx, :n_ctx]
            qk = qk.float()

            w = F.softmax(qk, dim=-1).to(q.dtype)
            out = (w @ v).permute(0, 2, 1, 3).flatten(start_dim=2)
            qk = qk.detach()

        return out, qk


class ResidualAttentionBlock(nn.Module):
    def __init__(self, n_state: int, n_head: int, cross_attention: bool = False):
        super().__init__()

        self.attn = MultiHeadAttention(n_state, n_head)
        self.attn_ln = LayerNorm(n_state)

        self.cross_attn = MultiHeadAttention(n_state, n_head) if cross_attention else None
        self.cross_attn_ln = LayerNorm(n_state) if cross_attention else None

        n_mlp = n_state * 4
        self.mlp = nn.Sequential(Linear(n_state, n_mlp), nn.GELU(), Linear(n_mlp, n_state))
        self.mlp_ln = LayerNorm(n_state)

    def forward(self, x, xa=None, mask=None, kv_cache=None):
        x = x + self.attn(self.attn_ln(x), mask=mask, kv_cache=kv_cache)[0]
        if self.cross_attn:
            x = x + self.cross_attn(self.cross_attn_ln(x), xa, kv_cache=kv_cache)[0]
        x = x + self.mlp(self.mlp_ln(x))
        return x


class AudioEncoder(nn.Module):
    def __init__(self, n_mels: int, n_ctx: int, n_state: int, n_head: int, n_layer: int):
        super().__init__()
        self.conv1 = Conv1d(n_mels, n_state, kernel_size=3, padding=1)
        self.conv2 = Conv1d(n_state, n_state, kernel_size=3, stride=2, padding=1)
        self.register_buffer("positional_embedding", sinusoids(n_ctx, n_state))

        self.blocks = nn.ModuleList([ResidualAttentionBlock(n_state, n_head) for _ in range(n_layer)])
        self.ln_post = LayerNorm(n_state)

    def forward(self, x):
        """
        x : torch.Tensor, shape = (batch_size, n_mels, n_ctx)
            the mel spectrogram of the audio
        """
        x = F.gelu(self.conv1(x))
        x = F.gelu(self.conv2(x))
        x = x.permute(0, 2, 1)

        assert x.shape[1:] == self.positional_embedding.shape, "incorrect audio shape"
        x = (x + self.positional_embedding).to(x.dtype)

        for block in self.blocks:
            x = block(x)

        x = self.ln_post(x)
        return x


class TextDecoder(nn.Module):
    def __init__(self, n_vocab: int, n_ctx: int, n_state: int, n_head: int, n_layer: int):
        super().__init__()

        self.token_embedding = nn.Embedding(n_vocab, n_state)
        self.positional_embedding = nn.Parameter(torch.empty(n_ctx, n_state))

        self.blocks = nn.ModuleList(
            [ResidualAttentionBlock(n_state, n_head, cross_attention=True) for _ in range(n_layer)]
        )
        self.ln = LayerNorm(n_state)

        mask = torch.empty(n_ctx, n_ctx).fill_(-np.inf).triu_(1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x, xa, kv_cache=None):
        """
        x : torch.LongTensor, shape = (batch_size, <= n_ctx)
            the text tokens
        xa : torch.Tensor, shape = (batch_size, n_audio_ctx, n_audio_state)
            the encoded audio features to be attended on
        """
        offset = next(iter(kv_cache.values())).shape[1] if kv_cache else 0
        x = self.token_embedding(x) + self.positional_embedding[offset : offset + x.shape[-1]]
        x = x.to(xa.dtype)

        for block in self.blocks:
            x = block(x, xa, mask=self.mask, kv_cache=kv_cache)

        x = self.ln(x)
        logits = (x @ torch.transpose(self.token_embedding.weight.to(x.dtype), 0, 1)).float()

        return logits


class Whisper(nn.Module):
    def __init__(self, dims: ModelDimensions):
        super().__init__()
        self.dims = dims
        self.encoder = AudioEncoder(
            self.dims.n_mels,
            self.dims.n_audio_ctx,
            self.dims.n_audio_state,
            self.dims.n_audio_head,
            self.dims.n_audio_layer,
        )
        self.decoder = TextDecoder(
            self.dims.n_vocab,
            self.dims.n_text_ctx,
            self.dims.n_text_state,
            self.dims.n_text_head,
            self.dims.n_text_layer,
        )
        # use the last half among the decoder layers for time alignment by default;
        # to use a specific set of heads, see `set_alignment_heads()` below.
        all_heads = torch.zeros(self.dims.n_text_layer, self.dims.n_text_head, dtype=torch.bool)
        all_heads[self.dims.n_text_layer // 2 :] = True
        self.register_buffer("alignment_heads", all_heads.to_sparse(), persistent=False)

    def embed_audio(self, mel):
        return self.encoder(mel)

    def logits(self, tokens, audio_features):
        return self.decoder(tokens, audio_features)

    def forward(self, mel, tokens):
        return self.decoder(tokens, self.encoder(mel))

    @property
    def device(self):
        return next(self.parameters()).device

    def install_kv_cache_hooks(self, cache=None):
        cache = {**cache} if cache is not None else {}
        hooks = []

        def save_to_cache(module, _, output):
            if module not in cache or output.shape[1] > self.dims.n_text_ctx:
                # save as-is, for the first token or cross attention
                cache[module] = output
            else:
                cache[module] = torch.cat([cache[module], output], dim=1).detach()
            return cache[module]

        def install_hooks(layer: nn.Module):
            if isinstance(layer, MultiHeadAttention):
                hooks.append(layer.key.register_forward_hook(save_to_cache))
                hooks.append(layer.value.register_forward_hook(save_to_cache))

        self.decoder.apply(install_hooks)
        return cache, hooks


@torch.no_grad()
def detect_language(model, mel):
    all_language_tokens = [LANG_EN, LANG_DE]
    n_audio = mel.shape[0]
    x = torch.tensor([[SOT]] * n_audio).to(mel.device)  # [n_audio, 1]
    logits = model.logits(x, model.embed_audio(mel))[:, 0]

    # collect detected languages; suppress all non-language tokens
    mask = torch.ones(logits.shape[-1], dtype=torch.bool)
    mask[list(all_language_tokens)] = False
    logits[:, mask] = -np.inf
    language_tokens = logits.argmax(dim=-1)
    language_token_probs = logits.softmax(dim=-1).cpu()
    return language_tokens, language_token_probs[:, all_language_tokens]


class GreedyDecoder:
    def __init__(self, temperature: float, eot: int):
        self.temperature = temperature
        self.eot = eot

    def update(self, tokens, logits, sum_logprobs):
        next_tokens = logits.argmax(dim=-1)
        logprobs = F.log_softmax(logits.float(), dim=-1)
        current_logprobs = logprobs[torch.arange(logprobs.shape[0]), next_tokens]
        sum_logprobs += current_logprobs * (tokens[:, -1] != self.eot)

        next_tokens[tokens[:, -1] == self.eot] = self.eot
        tokens = torch.cat([tokens, next_tokens[:, None]], dim=-1)

        completed = (tokens[:, -1] == self.eot).all()
        return tokens, completed


@torch.no_grad()
def decode(model, mel, max_tokens=4):
    audio_features = model.embed_audio(mel)
    n_audio = mel.shape[0]
    sample_begin = 4
    tokens = torch.tensor([[SOT, LANG_EN, TRANSCRIBE, NO_TIMESTAMPS]]).repeat(n_audio, 1)
    sum_logprobs = torch.zeros(n_audio)
    decoder = GreedyDecoder(temperature=0.0, eot=EOT)
    kv_cache, hooks = model.install_kv_cache_hooks()
    try:
        for _ in range(max_tokens):
            # the initial prompt whole, then only the last token: the hooks hold the keys and values
            step_tokens = tokens if not kv_cache else tokens[:, -1:]
            logits = model.decoder(step_tokens, audio_features, kv_cache=kv_cache)[:, -1]
            if tokens.shape[1] == sample_begin:  # SuppressBlank
                logits[:, [BLANK] + [EOT]] = -np.inf
            logits[:, [SOT, LANG_EN, LANG_DE, TRANSCRIBE, NO_TIMESTAMPS]] = -np.inf  # SuppressTokens
            tokens, completed = decoder.update(tokens, logits, sum_logprobs)
            if completed or tokens.shape[-1] > model.dims.n_text_ctx - 1:
                break
    finally:
        for hook in hooks:
            hook.remove()
    return tokens[:, sample_begin:].tolist(), sum_logprobs.tolist(), len(kv_cache)


def make_batch(step):
    """Tones whose pitch names the words of the transcript; clips of unequal length padded or trimmed."""
    audios, texts = [], []
    for row in range(3):
        word = 8 + (row + step) % 8
        frequency = 100.0 + 60.0 * (word - 8)
        length = N_SAMPLES + 24 * (row - 1)
        t = np.arange(length, dtype=np.float32) / SAMPLE_RATE
        audios.append(pad_or_trim(torch.from_numpy((0.5 * np.sin(2 * np.pi * frequency * t)).astype(np.float32))))
        texts.append([SOT, LANG_EN, TRANSCRIBE, NO_TIMESTAMPS, word, word + 4, EOT])
    mel = torch.stack([log_mel_spectrogram(audio) for audio in audios])
    tokens = torch.tensor(texts)
    labels = tokens[:, 1:].clone()
    labels[:, :3] = -100  # the prompt is given, not learnt
    return mel, tokens[:, :-1], labels


DIMS = ModelDimensions(
    n_mels=N_MELS,
    n_audio_ctx=N_FRAMES // 2,
    n_audio_state=16,
    n_audio_head=2,
    n_audio_layer=2,
    n_vocab=N_VOCAB,
    n_text_ctx=7,
    n_text_state=16,
    n_text_head=2,
    n_text_layer=2,
)


def build():
    torch.manual_seed(0)
    model = Whisper(DIMS)
    nn.init.normal_(model.decoder.positional_embedding, std=0.02)
    return model


def train(model, steps=4):
    optimizer = optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    model.train()
    with disable_sdpa() if not SDPA else nullcontext():
        for step in range(steps):
            mel, tokens, labels = make_batch(step)
            logits = model(mel, tokens)
            loss = F.cross_entropy(logits.reshape(-1, N_VOCAB), labels.reshape(-1), ignore_index=-100)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        model.eval()
        mel, _, _ = make_batch(steps)
        language_tokens, language_probs = detect_language(model, mel)
        texts, sum_logprobs, cached = decode(model, mel)
    return {
        "losses": losses,
        "mel": mel.flatten().tolist(),
        "languages": language_tokens.tolist(),
        "language_probs": language_probs.flatten().tolist(),
        "texts": texts,
        "sum_logprobs": sum_logprobs,
        "cached_modules": cached,
        "alignment_heads": model.alignment_heads.to_dense().flatten().tolist(),
    }


if __name__ == "__main__":
    print(train(build(), steps=30))
