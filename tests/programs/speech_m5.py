"""The official "Speech Command Classification with torchaudio" tutorial's M5 network, at tiny sizes on
synthetic one-second clips.

Its idioms: a ``Dataset`` of ``(waveform, sample_rate, label, speaker_id, utterance_number)`` tuples of
different lengths; ``label_to_index`` by ``torch.tensor(labels.index(word))``; the collate function that
transposes each ``(1, time)`` waveform with ``.t()``, pads them by ``nn.utils.rnn.pad_sequence(batch_first=
True, padding_value=0.)`` and turns the batch back by ``.permute(0, 2, 1)``, and ``torch.stack`` of 0-d
targets; M5 (a ``Conv1d(kernel_size=80, stride=16)`` over the raw waveform, ``BatchNorm1d``,
``MaxPool1d(4)`` — or ``F.max_pool1d`` in the other form —, ``F.avg_pool1d(x, x.shape[-1])`` over the
remaining length, ``x.permute(0, 2, 1)``, ``F.log_softmax(x, dim=2)``); ``F.nll_loss(output.squeeze(),
target)``; Adam with ``weight_decay`` under ``StepLR``; ``count_parameters`` by ``p.numel()`` over
``requires_grad`` parameters; ``get_likely_index`` by ``argmax(dim=-1)`` and ``pred.squeeze().eq(target)
.sum().item()``. ``FRONTEND = "spectrogram"`` puts a power spectrogram in front (``torch.stft`` with a
``torch.hann_window``, ``return_complex=True``, ``.abs().pow(2)``, ``torch.log(spec + 1e-6)``, then
per-utterance normalisation by ``mean``/``std`` with ``keepdim=True``) and feeds its frequency bins to M5 as
channels."""

from __future__ import annotations

import numpy as np
from shim import DataLoader, F, nn, optim, torch

FRONTEND = "waveform"  # or "spectrogram"
POOL = "module"  # or "functional": F.max_pool1d in forward
SAMPLE_RATE = 8000
N_FFT = 64
HOP = 16
LABELS = ["backward", "bed", "bird", "cat"]
BATCH = 4
SHUFFLE = True


class SyntheticSpeechCommands(torch.utils.data.Dataset):
    """SPEECHCOMMANDS' items: tones whose pitch names the word, of 0.9 to 1 s."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.items = []
        for i in range(n):
            label = LABELS[i % len(LABELS)]
            length = int(rng.integers(SAMPLE_RATE * 9 // 10, SAMPLE_RATE + 1))
            t = np.arange(length) / SAMPLE_RATE
            tone = np.sin(2 * np.pi * (300 + 500 * LABELS.index(label)) * t)
            waveform = (0.5 * tone + 0.1 * rng.standard_normal(length)).astype(np.float32)
            self.items.append((waveform[None, :], SAMPLE_RATE, label, f"speaker{i % 3}", i))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, n):
        waveform, sample_rate, label, speaker_id, utterance_number = self.items[n]
        return torch.from_numpy(waveform), sample_rate, label, speaker_id, utterance_number


def label_to_index(word):
    # Return the position of the word in labels
    return torch.tensor(LABELS.index(word))


def index_to_label(index):
    # Return the word corresponding to the index in labels
    # This is the inverse of label_to_index
    return LABELS[index]


def pad_sequence(batch):
    # Make all tensor in a batch the same length by padding with zeros
    batch = [item.t() for item in batch]
    batch = torch.nn.utils.rnn.pad_sequence(batch, batch_first=True, padding_value=0.0)
    return batch.permute(0, 2, 1)


def collate_fn(batch):
    # A data tuple has the form:
    # waveform, sample_rate, label, speaker_id, utterance_number

    tensors, targets = [], []

    # Gather in lists, and encode labels as indices
    for waveform, _, label, *_ in batch:
        tensors += [waveform]
        targets += [label_to_index(label)]

    # Group the list of tensors into a batched tensor
    tensors = pad_sequence(tensors)
    targets = torch.stack(targets)

    return tensors, targets


class Spectrogram(nn.Module):
    """A power spectrogram in log scale, each utterance normalised."""

    def __init__(self, n_fft=N_FFT, hop_length=HOP):
        super().__init__()
        self.n_fft, self.hop_length = n_fft, hop_length
        self.register_buffer("window", torch.hann_window(n_fft))

    def forward(self, waveform):  # (batch, 1, time) -> (batch, n_fft // 2 + 1, frames)
        spec = torch.stft(
            waveform.squeeze(1), self.n_fft, hop_length=self.hop_length, window=self.window, return_complex=True
        )
        spec = torch.log(spec.abs().pow(2) + 1e-6)
        return (spec - spec.mean(dim=(1, 2), keepdim=True)) / spec.std(dim=(1, 2), keepdim=True)


class M5(nn.Module):
    def __init__(self, n_input=1, n_output=35, stride=16, n_channel=32, first_kernel=80):
        super().__init__()
        self.conv1 = nn.Conv1d(n_input, n_channel, kernel_size=first_kernel, stride=stride)
        self.bn1 = nn.BatchNorm1d(n_channel)
        self.pool1 = nn.MaxPool1d(4)
        self.conv2 = nn.Conv1d(n_channel, n_channel, kernel_size=3)
        self.bn2 = nn.BatchNorm1d(n_channel)
        self.pool2 = nn.MaxPool1d(4)
        self.conv3 = nn.Conv1d(n_channel, 2 * n_channel, kernel_size=3)
        self.bn3 = nn.BatchNorm1d(2 * n_channel)
        self.pool3 = nn.MaxPool1d(4)
        self.conv4 = nn.Conv1d(2 * n_channel, 2 * n_channel, kernel_size=3)
        self.bn4 = nn.BatchNorm1d(2 * n_channel)
        self.pool4 = nn.MaxPool1d(4)
        self.fc1 = nn.Linear(2 * n_channel, n_output)

    def _pool(self, pool, x):
        return pool(x) if POOL == "module" else F.max_pool1d(x, 4)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(self.bn1(x))
        x = self._pool(self.pool1, x)
        x = self.conv2(x)
        x = F.relu(self.bn2(x))
        x = self._pool(self.pool2, x)
        x = self.conv3(x)
        x = F.relu(self.bn3(x))
        x = self._pool(self.pool3, x)
        x = self.conv4(x)
        x = F.relu(self.bn4(x))
        x = self._pool(self.pool4, x)
        x = F.avg_pool1d(x, x.shape[-1])
        x = x.permute(0, 2, 1)
        x = self.fc1(x)
        return F.log_softmax(x, dim=2)


def build():
    torch.manual_seed(0)
    if FRONTEND == "spectrogram":
        return nn.Sequential(
            Spectrogram(), M5(n_input=N_FFT // 2 + 1, n_output=len(LABELS), stride=1, n_channel=4, first_kernel=3)
        )
    return M5(n_input=1, n_output=len(LABELS), n_channel=4)


def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def number_of_correct(pred, target):
    # count number of correct predictions
    return pred.squeeze().eq(target).sum().item()


def get_likely_index(tensor):
    # find most likely label index for each element in the batch
    return tensor.argmax(dim=-1)


def train(model, steps=3):
    device = torch.device("cpu")
    torch.manual_seed(1)
    train_set, test_set = SyntheticSpeechCommands(BATCH * steps, 0), SyntheticSpeechCommands(BATCH, 1)
    train_loader = DataLoader(train_set, batch_size=BATCH, shuffle=SHUFFLE, collate_fn=collate_fn, drop_last=False)
    test_loader = DataLoader(test_set, batch_size=BATCH, shuffle=False, collate_fn=collate_fn, drop_last=False)
    model.to(device)
    optimizer = optim.Adam(model.parameters(), lr=0.01, weight_decay=0.0001)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)  # reduce the lr after 2 epochs
    record = {"losses": [], "lr": [], "n_parameters": count_parameters(model)}
    for _epoch in range(1, 2):
        model.train()
        for _batch_idx, (data, target) in enumerate(train_loader):
            data = data.to(device)
            target = target.to(device)
            output = model(data)
            # negative log-likelihood for a tensor of size (batch x 1 x n_output)
            loss = F.nll_loss(output.squeeze(), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            record["losses"].append(loss.item())
        scheduler.step()
        record["lr"].append(scheduler.get_last_lr()[0])
    model.eval()
    correct = 0
    for data, target in test_loader:
        output = model(data.to(device))
        pred = get_likely_index(output)
        correct += number_of_correct(pred, target.to(device))
    record["accuracy"] = correct / len(test_loader.dataset)
    # the eval outputs themselves are left out: the conv biases before BatchNorm get round-off gradients
    # that Adam turns into full steps, differently in each library, and eval-mode BatchNorm sees them
    record["last_batch_shape"] = list(data.shape)
    return record


if __name__ == "__main__":
    print(train(build()))
