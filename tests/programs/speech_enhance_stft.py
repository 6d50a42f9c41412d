"""A speech-enhancement model that masks the noisy spectrogram and resynthesises the waveform, trained with
the negative SI-SNR, as Conv-TasNet / DCCRN-style recipes and the torchaudio enhancement tutorials write
it, at tiny sizes on synthetic tones in noise.

Its idioms: ``torch.stft(x, n_fft, hop_length, win_length, window=torch.hann_window(n_fft, device=x.device),
center=True, pad_mode="reflect", return_complex=True)``; the magnitude by ``spec.abs()`` and the phase by
``torch.angle(spec)``; a mask predicted from ``torch.log1p(mag)`` by an LSTM over frames (``permute(0, 2,
1)``, ``batch_first=True``) and ``torch.sigmoid``; the enhanced spectrum by ``torch.polar(mag * mask,
phase)`` (or ``spec * mask`` of a complex tensor times a real one); the waveform back by ``torch.istft(...,
length=x.shape[-1])``; the SI-SNR loss (``x - x.mean(dim=-1, keepdim=True)``, the projection ``<s', s>
s / ||s||^2`` by ``torch.sum(..., keepdim=True)``, ``10 * torch.log10(... + EPS)``); a noise mixed at a
given SNR by ``torch.norm`` ratios; ``clip_grad_norm_`` returning the total norm; Adam with
``ReduceLROnPlateau(mode="max")`` on the validation SI-SNR improvement; and ``torch.view_as_real`` of the
spectrum for a complex-MSE variant (``LOSS = "spectral"``)."""

from __future__ import annotations

import math

import numpy as np
from shim import F, nn, optim, torch

N_FFT = 32
HOP = 8
EPS = 1e-8
LOSS = "si_snr"  # or "spectral": MSE of view_as_real spectra plus the SI-SNR
MASKING = "polar"  # or "complex": spec * mask
LENGTH = 400
BATCH = 3


def add_noise(clean, noise, snr_db):
    """Mix ``noise`` into ``clean`` at ``snr_db`` (per utterance)."""
    clean_power = torch.norm(clean, dim=-1, keepdim=True)
    noise_power = torch.norm(noise, dim=-1, keepdim=True)
    scale = clean_power / (noise_power * 10 ** (snr_db / 20))
    return clean + scale * noise


def si_snr(estimate, target):
    """Scale-invariant signal-to-noise ratio in dB, per utterance."""
    estimate = estimate - estimate.mean(dim=-1, keepdim=True)
    target = target - target.mean(dim=-1, keepdim=True)
    s_target = (
        torch.sum(estimate * target, dim=-1, keepdim=True) * target / (torch.sum(target**2, dim=-1, keepdim=True) + EPS)
    )
    e_noise = estimate - s_target
    ratio = torch.sum(s_target**2, dim=-1) / (torch.sum(e_noise**2, dim=-1) + EPS)
    return 10 * torch.log10(ratio + EPS)


class MaskEstimator(nn.Module):
    def __init__(self, n_fft=N_FFT, hop_length=HOP, hidden=12):
        super().__init__()
        self.n_fft, self.hop_length = n_fft, hop_length
        n_bins = n_fft // 2 + 1
        self.lstm = nn.LSTM(n_bins, hidden, num_layers=1, batch_first=True)
        self.fc = nn.Linear(hidden, n_bins)

    def stft(self, x):
        window = torch.hann_window(self.n_fft, device=x.device)
        return torch.stft(
            x,
            self.n_fft,
            hop_length=self.hop_length,
            win_length=self.n_fft,
            window=window,
            center=True,
            pad_mode="reflect",
            return_complex=True,
        )

    def istft(self, spec, length):
        window = torch.hann_window(self.n_fft, device=spec.device)
        return torch.istft(
            spec, self.n_fft, hop_length=self.hop_length, win_length=self.n_fft, window=window, length=length
        )

    def forward(self, noisy):
        spec = self.stft(noisy)  # (batch, bins, frames), complex
        mag, phase = spec.abs(), torch.angle(spec)
        features = torch.log1p(mag).permute(0, 2, 1)  # (batch, frames, bins)
        hidden, _ = self.lstm(features)
        mask = torch.sigmoid(self.fc(hidden)).permute(0, 2, 1)
        if MASKING == "polar":
            enhanced = torch.polar(mag * mask, phase)
        else:
            enhanced = spec * mask
        return self.istft(enhanced, length=noisy.shape[-1]), enhanced


def synthetic_batch(rng, batch=BATCH):
    t = np.arange(LENGTH) / 8000.0
    clean = np.stack([np.sin(2 * math.pi * rng.uniform(200, 900) * t) * rng.uniform(0.3, 1.0) for _ in range(batch)])
    noise = rng.standard_normal((batch, LENGTH))
    return torch.tensor(clean, dtype=torch.float32), torch.tensor(noise, dtype=torch.float32)


def build():
    torch.manual_seed(0)
    return MaskEstimator()


def train(model, steps=3):
    rng = np.random.default_rng(0)
    optimizer = optim.Adam(model.parameters(), lr=3e-3)
    scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="max", factor=0.5, patience=0)
    record = {"losses": [], "grad_norm": [], "val_improvement": [], "lr": []}
    val_clean, val_noise = synthetic_batch(np.random.default_rng(1), batch=2)
    val_noisy = add_noise(val_clean, val_noise, 0.0)
    for _ in range(steps):
        model.train()
        clean, noise = synthetic_batch(rng)
        noisy = add_noise(clean, noise, 5.0)
        estimate, enhanced = model(noisy)
        loss = -si_snr(estimate, clean).mean()
        if LOSS == "spectral":
            target_spec = model.stft(clean)
            loss = loss + F.mse_loss(torch.view_as_real(enhanced), torch.view_as_real(target_spec))
        optimizer.zero_grad()
        loss.backward()
        total_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
        optimizer.step()
        record["losses"].append(loss.item())
        record["grad_norm"].append(total_norm.item())
        model.eval()
        with torch.no_grad():
            val_estimate, _ = model(val_noisy)
            improvement = (si_snr(val_estimate, val_clean) - si_snr(val_noisy, val_clean)).mean().item()
        scheduler.step(improvement)
        record["val_improvement"].append(improvement)
        record["lr"].append(optimizer.param_groups[0]["lr"])
    # the resynthesis of an unmasked spectrum gives the signal back
    record["roundtrip_error"] = (model.istft(model.stft(val_noisy), LENGTH) - val_noisy).abs().max().item()
    return record


if __name__ == "__main__":
    print(train(build()))
