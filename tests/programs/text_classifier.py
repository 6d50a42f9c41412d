"""Text classification with an LSTM over packed variable-length sequences, or an EmbeddingBag, as the
PyTorch text tutorials and their many descendants write it.

Its idioms: a ``torch.utils.data.Dataset`` subclass returning ``(label, token list)`` pairs from a
hand-made vocabulary (a dict with ``<pad>`` and ``<unk>``); a ``DataLoader`` with a custom
``collate_fn`` that builds ``nn.utils.rnn.pad_sequence(texts, batch_first=True, padding_value=PAD)``
and the lengths; ``nn.Embedding(padding_idx=PAD)``; ``pack_padded_sequence(embedded, lengths.cpu(),
batch_first=True, enforce_sorted=False)`` into a two-layer bidirectional ``nn.LSTM``; the last
hidden states of both directions joined by ``torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)``,
or ``pad_packed_sequence`` and a masked mean over time from ``torch.arange(T)[None, :] < lengths[:, None]``;
the text-classification tutorial's ``nn.EmbeddingBag(mode="mean")`` over one flat tensor with
``offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)`` in the other form; ``F.cross_entropy``,
``clip_grad_norm_(model.parameters(), 0.1)``, SGD with ``StepLR(step_size=1, gamma=0.1)``; accuracy as
``(predicted_label.argmax(1) == label).sum().item()``."""

from __future__ import annotations

import numpy as np
from shim import DataLoader, F, nn, optim, torch

MODEL = "lstm"  # or "lstm_mean", "bag"
SHUFFLE = True
DEVICE = "cpu"
WORDS = "the a good bad movie film great awful plot acting was is very not".split()
PAD, UNK = 0, 1


def build_vocab(sentences):
    vocab = {"<pad>": PAD, "<unk>": UNK}
    for sentence in sentences:
        for token in sentence.split():
            vocab.setdefault(token, len(vocab))
    return vocab


def make_sentences(n, seed):
    rng = np.random.default_rng(seed)
    sentences, labels = [], []
    for _ in range(n):
        words = rng.choice(WORDS[:-2], rng.integers(2, 7)).tolist()
        label = int(rng.integers(0, 2))
        words.insert(int(rng.integers(0, len(words))), "great" if label else "awful")
        if rng.random() < 0.3:
            words.append("unseenword")
        sentences.append(" ".join(words))
        labels.append(label)
    return sentences, labels


class ReviewDataset(torch.utils.data.Dataset):
    def __init__(self, sentences, labels, vocab):
        self.sentences, self.labels, self.vocab = sentences, labels, vocab

    def __len__(self):
        return len(self.sentences)

    def __getitem__(self, idx):
        tokens = [self.vocab.get(token, UNK) for token in self.sentences[idx].split()]
        return self.labels[idx], tokens


def collate_padded(batch):
    labels, texts, lengths = [], [], []
    for label, tokens in batch:
        labels.append(label)
        texts.append(torch.tensor(tokens, dtype=torch.int64))
        lengths.append(len(tokens))
    texts = nn.utils.rnn.pad_sequence(texts, batch_first=True, padding_value=PAD)
    return torch.tensor(labels, dtype=torch.int64), texts, torch.tensor(lengths, dtype=torch.int64)


def collate_offsets(batch):
    label_list, text_list, offsets = [], [], [0]
    for label, tokens in batch:
        label_list.append(label)
        processed_text = torch.tensor(tokens, dtype=torch.int64)
        text_list.append(processed_text)
        offsets.append(processed_text.size(0))
    label_list = torch.tensor(label_list, dtype=torch.int64)
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    text_list = torch.cat(text_list)
    return label_list, text_list, offsets


class LSTMClassifier(nn.Module):
    def __init__(self, vocab_size, embedding_dim=6, hidden_dim=5, output_dim=2, n_layers=2, dropout=0.0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=PAD)
        self.rnn = nn.LSTM(
            embedding_dim, hidden_dim, num_layers=n_layers, bidirectional=True, dropout=dropout, batch_first=True
        )
        self.fc = nn.Linear(hidden_dim * 2, output_dim)

    def forward(self, text, text_lengths):
        embedded = self.embedding(text)
        packed_embedded = nn.utils.rnn.pack_padded_sequence(
            embedded, text_lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        packed_output, (hidden, cell) = self.rnn(packed_embedded)
        if MODEL == "lstm_mean":
            output, output_lengths = nn.utils.rnn.pad_packed_sequence(packed_output, batch_first=True)
            mask = (
                torch.arange(output.size(1), device=output.device)[None, :] < output_lengths.to(output.device)[:, None]
            )
            pooled = (output * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
            return self.fc(pooled)
        hidden = torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)
        return self.fc(hidden)


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim=6, num_class=2):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, mode="mean")
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        return self.fc(self.embedding(text, offsets))


def build():
    torch.manual_seed(0)
    sentences, _ = make_sentences(16, seed=0)
    vocab_size = len(build_vocab(sentences))
    return TextClassificationModel(vocab_size) if MODEL == "bag" else LSTMClassifier(vocab_size)


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    sentences, labels = make_sentences(16, seed=0)
    vocab = build_vocab(sentences)
    dataset = ReviewDataset(sentences, labels, vocab)
    collate = collate_offsets if MODEL == "bag" else collate_padded
    loader = DataLoader(dataset, batch_size=4, shuffle=SHUFFLE, collate_fn=collate)
    optimizer = optim.SGD(model.parameters(), lr=1.0 if MODEL == "bag" else 0.5)
    scheduler = optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.5)
    record = {"losses": [], "accuracy": [], "lr": []}
    model.train()
    total_acc, total_count = 0, 0
    for idx, (label, text, extra) in enumerate(loader):
        if idx == steps:
            break
        label, text, extra = label.to(device), text.to(device), extra.to(device)
        optimizer.zero_grad()
        predicted_label = model(text, extra)
        loss = F.cross_entropy(predicted_label, label)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        scheduler.step()
        total_acc += (predicted_label.argmax(1) == label).sum().item()
        total_count += label.size(0)
        record["losses"].append(loss.item())
        record["accuracy"].append(total_acc / total_count)
        record["lr"].append(scheduler.get_last_lr()[0])
    model.eval()
    with torch.no_grad():
        label, text, extra = collate([dataset[i] for i in range(len(dataset))])
        record["eval_accuracy"] = (
            (model(text.to(device), extra.to(device)).argmax(1) == label.to(device)).float().mean().item()
        )
    record["embedding_pad_row"] = model.embedding.weight[PAD].abs().sum().item()
    return record


if __name__ == "__main__":
    print(train(build()))
