"""A small speech recogniser trained with CTC, as DeepSpeech2-style PyTorch tutorials write it.

Its idioms: spectrogram-like inputs ``(batch, n_feats, time)`` padded to the longest utterance,
their lengths a long tensor; a ``Conv1d(stride=2)`` front end with ``BatchNorm1d`` and ``GELU`` whose
output lengths are ``torch.div(lengths + 2 * pad - kernel, stride, rounding_mode="floor") + 1``;
``x.transpose(1, 2)`` into a bidirectional ``nn.GRU(batch_first=True)`` with ``LayerNorm`` before it; a
``Linear`` classifier and ``F.log_softmax(x, dim=2)``; ``nn.CTCLoss(blank=0, zero_infinity=True)`` on
``output.transpose(0, 1)`` with the targets concatenated into one 1-D tensor (or padded 2-D,
``reduction="sum"`` divided by the batch, in the other form) and ``input_lengths``/``target_lengths``;
AdamW with ``OneCycleLR(anneal_strategy="linear")``; greedy decoding by ``argmax(dim=2)``, collapsing
repeats with ``torch.unique_consecutive`` and dropping blanks; the character error rate from a
Levenshtein distance over ``tolist()``."""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

TARGETS = "concatenated"  # or "padded"
N_FEATS = 6
N_CLASSES = 5  # the blank (0) and four "characters"
DEVICE = "cpu"


class SpeechRecognitionModel(nn.Module):
    def __init__(self, n_feats=N_FEATS, n_class=N_CLASSES, hidden=8, rnn_dim=6):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv1d(n_feats, hidden, kernel_size=3, stride=2, padding=1), nn.BatchNorm1d(hidden), nn.GELU()
        )
        self.layer_norm = nn.LayerNorm(hidden)
        self.birnn = nn.GRU(input_size=hidden, hidden_size=rnn_dim, num_layers=1, batch_first=True, bidirectional=True)
        self.classifier = nn.Sequential(nn.Linear(rnn_dim * 2, rnn_dim), nn.GELU(), nn.Linear(rnn_dim, n_class))

    def forward(self, x):
        x = self.cnn(x)
        x = x.transpose(1, 2)  # (batch, time, feature)
        x = F.gelu(self.layer_norm(x))
        x, _ = self.birnn(x)
        return self.classifier(x)

    @staticmethod
    def output_lengths(lengths):
        return torch.div(lengths + 2 * 1 - 3, 2, rounding_mode="floor") + 1


def levenshtein(a, b):
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def greedy_decode(output, lengths, blank=0):
    arg_maxes = torch.argmax(output, dim=2)
    decodes = []
    for i, args in enumerate(arg_maxes):
        collapsed = torch.unique_consecutive(args[: lengths[i]])
        decodes.append([int(index) for index in collapsed.tolist() if index != blank])
    return decodes


def make_batch(rng, batch=3, max_time=14):
    lengths = rng.integers(max_time // 2, max_time + 1, batch)
    lengths[0] = max_time
    labels = [rng.integers(1, N_CLASSES, rng.integers(1, 4)).tolist() for _ in range(batch)]
    spectrograms = np.zeros((batch, N_FEATS, max_time), np.float32)
    for i, (length, label) in enumerate(zip(lengths, labels)):
        frames = rng.standard_normal((N_FEATS, length)) * 0.3
        for k, char in enumerate(label):
            start = k * length // len(label)
            frames[char, start : start + 2] += 2.0
        spectrograms[i, :, :length] = frames
    return torch.from_numpy(spectrograms), labels, torch.tensor(lengths, dtype=torch.long)


def build():
    torch.manual_seed(7)
    return SpeechRecognitionModel()


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    rng = np.random.default_rng(7)
    criterion = nn.CTCLoss(blank=0, zero_infinity=True, reduction="mean" if TARGETS == "concatenated" else "sum")
    optimizer = optim.AdamW(model.parameters(), lr=5e-3)
    scheduler = optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=5e-3, steps_per_epoch=steps, epochs=4, anneal_strategy="linear"
    )
    record = {"losses": [], "lr": [], "cer": []}
    for _ in range(steps):
        model.train()
        spectrograms, labels, lengths = make_batch(rng)
        spectrograms = spectrograms.to(device)
        label_lengths = torch.tensor([len(label) for label in labels], dtype=torch.long)
        if TARGETS == "concatenated":
            targets = torch.tensor([c for label in labels for c in label], dtype=torch.long)
        else:
            targets = nn.utils.rnn.pad_sequence([torch.tensor(label) for label in labels], batch_first=True)
        input_lengths = model.output_lengths(lengths)
        optimizer.zero_grad()
        output = F.log_softmax(model(spectrograms), dim=2)
        loss = criterion(output.transpose(0, 1), targets.to(device), input_lengths, label_lengths)
        if TARGETS != "concatenated":
            loss = loss / spectrograms.size(0)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        record["losses"].append(loss.item())
        record["lr"].append(scheduler.get_last_lr()[0])
        model.eval()
        with torch.no_grad():
            decoded = greedy_decode(model(spectrograms), input_lengths)
        errors = sum(levenshtein(d, t) for d, t in zip(decoded, labels))
        record["cer"].append(errors / sum(len(t) for t in labels))
    record["input_lengths"] = input_lengths.tolist()
    return record


if __name__ == "__main__":
    print(train(build()))
