"""A BiLSTM part-of-speech tagger over padded batches, as sequence-labelling tutorials and repositories
(bentrevett/pytorch-pos-tagging, NER taggers with a character CNN) write it, on a synthetic tagged corpus.

Its idioms: sentences sorted by length (``sorted(..., key=len, reverse=True)``) then padded by
``nn.utils.rnn.pad_sequence(batch_first=True, padding_value=...)``; or, unsorted, ``lengths.sort(0,
descending=True)`` with the batch reordered by ``perm_idx`` and restored by ``perm_idx.sort(0)``'s
``unperm_idx``; ``nn.Embedding(padding_idx=PAD)``; a character CNN (``view(-1, max_chars)``, Conv1d,
``torch.max(x, dim=2)`` over characters, ``view(batch, seq, -1)``) concatenated to the word embeddings;
``pack_padded_sequence(embedded, lengths.cpu(), batch_first=True)`` (``enforce_sorted`` left at its
default True) into a bidirectional two-layer LSTM, ``pad_packed_sequence(..., batch_first=True,
total_length=...)``; the loss by ``CrossEntropyLoss(ignore_index=TAG_PAD)`` over ``view(-1,
n_tags)``, or on the packed data directly (``packed_out.data`` against ``pack_padded_sequence(tags,
...).data``); accuracy over ``tags != TAG_PAD`` by ``masked_select``; ``clip_grad_norm_``; and
``pack_sequence`` of a sorted list of tensors for inference, with ``PackedSequence``'s ``batch_sizes``.
"""

from __future__ import annotations

import numpy as np
from shim import nn, optim, torch

DROPOUT = 0.25
LOSS = "padded"  # or "packed": the loss on PackedSequence.data
SORT = "list"  # or "tensor": lengths.sort with perm_idx / unperm_idx
CHAR_CNN = True
VOCAB, N_CHARS, N_TAGS = 16, 8, 4
PAD, TAG_PAD, CHAR_PAD = 0, N_TAGS, 0


class BiLSTMPOSTagger(nn.Module):
    def __init__(
        self, input_dim, embedding_dim, hidden_dim, output_dim, n_layers, bidirectional, dropout, pad_idx, char_dim=4
    ):
        super().__init__()
        self.embedding = nn.Embedding(input_dim, embedding_dim, padding_idx=pad_idx)
        lstm_in = embedding_dim
        if CHAR_CNN:
            self.char_embedding = nn.Embedding(N_CHARS, char_dim, padding_idx=CHAR_PAD)
            self.char_cnn = nn.Conv1d(char_dim, 6, kernel_size=3, padding=1)
            lstm_in += 6
        self.lstm = nn.LSTM(
            lstm_in,
            hidden_dim,
            num_layers=n_layers,
            bidirectional=bidirectional,
            dropout=dropout if n_layers > 1 else 0,
            batch_first=True,
        )
        self.fc = nn.Linear(hidden_dim * 2 if bidirectional else hidden_dim, output_dim)
        self.dropout = nn.Dropout(dropout)

    def char_features(self, chars):
        # chars = [batch size, sent len, max chars]
        batch_size, seq_len, max_chars = chars.shape
        x = self.char_embedding(chars.view(-1, max_chars))  # [batch * sent, max chars, char dim]
        x = self.char_cnn(x.transpose(1, 2))  # [batch * sent, filters, max chars]
        x, _ = torch.max(x, dim=2)
        return x.view(batch_size, seq_len, -1)

    def forward(self, text, text_lengths, chars=None, total_length=None):
        # text = [batch size, sent len]
        embedded = self.dropout(self.embedding(text))
        if CHAR_CNN:
            embedded = torch.cat([embedded, self.char_features(chars)], dim=2)
        packed_embedded = nn.utils.rnn.pack_padded_sequence(embedded, text_lengths.cpu(), batch_first=True)
        packed_output, (hidden, cell) = self.lstm(packed_embedded)
        if LOSS == "packed":
            # predictions straight from the packed data: one row per real token
            return self.fc(self.dropout(packed_output.data)), packed_output
        outputs, output_lengths = nn.utils.rnn.pad_packed_sequence(
            packed_output, batch_first=True, total_length=total_length
        )
        # outputs = [batch size, sent len, hid dim * n directions]
        predictions = self.fc(self.dropout(outputs))
        return predictions, output_lengths


def make_corpus(seed, n):
    """Sentences of 2-6 words; a word's tag is its id mod N_TAGS, shifted after a word of tag 0."""
    rng = np.random.default_rng(seed)
    corpus = []
    for _ in range(n):
        length = int(rng.integers(2, 7))
        words = rng.integers(1, VOCAB, size=length)
        tags = words % N_TAGS
        tags[1:][tags[:-1] == 0] = (tags[1:][tags[:-1] == 0] + 1) % N_TAGS
        chars = np.zeros((length, 4), np.int64)
        for k, w in enumerate(words):
            spelled = [1 + (w + j) % (N_CHARS - 1) for j in range(1 + w % 4)]
            chars[k, : len(spelled)] = spelled
        corpus.append((torch.tensor(words), torch.tensor(tags), torch.tensor(chars)))
    return corpus


def collate(batch):
    if SORT == "list":
        batch = sorted(batch, key=lambda item: len(item[0]), reverse=True)
    words = nn.utils.rnn.pad_sequence([w for w, _, _ in batch], batch_first=True, padding_value=PAD)
    tags = nn.utils.rnn.pad_sequence([t for _, t, _ in batch], batch_first=True, padding_value=TAG_PAD)
    chars = nn.utils.rnn.pad_sequence([c for _, _, c in batch], batch_first=True, padding_value=CHAR_PAD)
    lengths = torch.tensor([len(w) for w, _, _ in batch])
    return words, tags, chars, lengths


def categorical_accuracy(preds, y, tag_pad_idx):
    """Returns accuracy per batch, i.e. if you get 8/10 right, this returns 0.8, NOT 8"""
    max_preds = preds.argmax(dim=1, keepdim=True)  # get the index of the max probability
    non_pad_elements = (y != tag_pad_idx).nonzero()
    correct = max_preds[non_pad_elements].squeeze(1).eq(y[non_pad_elements])
    return correct.sum() / y[non_pad_elements].shape[0]


def build():
    torch.manual_seed(0)
    return BiLSTMPOSTagger(VOCAB, 8, 8, N_TAGS, 2, True, DROPOUT, PAD)


def step_batch(model, batch, criterion):
    words, tags, chars, lengths = batch
    if SORT == "tensor":
        lengths, perm_idx = lengths.sort(0, descending=True)
        words, tags, chars = words[perm_idx], tags[perm_idx], chars[perm_idx]
    predictions, extra = model(words, lengths, chars, total_length=words.shape[1])
    if LOSS == "packed":
        targets = nn.utils.rnn.pack_padded_sequence(tags, lengths, batch_first=True).data
        loss = criterion(predictions, targets)
        acc = categorical_accuracy(predictions, targets, TAG_PAD)
    else:
        flat = predictions.view(-1, predictions.shape[-1])
        loss = criterion(flat, tags.view(-1))
        acc = categorical_accuracy(flat, tags.view(-1), TAG_PAD)
    if SORT == "tensor" and LOSS != "packed":
        _, unperm_idx = perm_idx.sort(0)
        predictions = predictions[unperm_idx]
    return loss, acc, predictions


def train(model, steps=4):
    corpus = make_corpus(0, 4 * steps)
    criterion = nn.CrossEntropyLoss(ignore_index=TAG_PAD)
    optimizer = optim.Adam(model.parameters(), lr=0.02)
    record = {"losses": [], "acc": []}
    model.train()
    for i in range(steps):
        batch = collate(corpus[4 * i : 4 * i + 4])
        optimizer.zero_grad()
        loss, acc, _ = step_batch(model, batch, criterion)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        record["losses"].append(loss.item())
        record["acc"].append(acc.item())
    model.eval()
    with torch.no_grad():
        test = sorted(make_corpus(1, 3), key=lambda item: len(item[0]), reverse=True)
        packed = nn.utils.rnn.pack_sequence([w for w, _, _ in test])
        record["batch_sizes"] = packed.batch_sizes.tolist()
        words, lengths = nn.utils.rnn.pad_packed_sequence(packed, batch_first=True, padding_value=PAD)
        chars = nn.utils.rnn.pad_sequence([c for _, _, c in test], batch_first=True)
        predictions, _ = model(words, lengths, chars)
        if LOSS == "packed":
            predictions, _ = nn.utils.rnn.pad_packed_sequence(
                nn.utils.rnn.PackedSequence(predictions, packed.batch_sizes), batch_first=True
            )
        record["test_tags"] = predictions.argmax(-1).flatten().tolist()
        mask = nn.utils.rnn.pad_sequence([t for _, t, _ in test], batch_first=True, padding_value=TAG_PAD) != TAG_PAD
        record["test_logit_sum"] = torch.masked_select(predictions, mask.unsqueeze(-1)).sum().item()
    return record


if __name__ == "__main__":
    print(train(build()))
