"""A GRU encoder-decoder with Luong attention learns to reverse variable-length token sequences,
as seq2seq tutorials write it.

Idioms: ``pad_sequence`` of a list of tensors; ``pack_padded_sequence(..., enforce_sorted=False)``
with a bidirectional encoder GRU and ``pad_packed_sequence`` back (``total_length``); the two
directions' final states summed; a padding mask from lengths by ``torch.arange(...)[None] <
lengths[:, None]``; attention scores by ``torch.bmm``, ``masked_fill(~mask, float("-inf"))``,
softmax, and the context by ``bmm`` again; a decoder stepping one token at a time with teacher
forcing chosen by Python's ``random``; ``topk(1)`` greedy decoding with ``.detach()``;
``torch.stack`` of per-step outputs; ``nn.NLLLoss(ignore_index=PAD)`` on ``log_softmax``; Adam
with ``clip_grad_norm_``; ``StepLR``.
"""

from __future__ import annotations

import random

import numpy as np
from shim import F, nn, optim, torch

DEVICE = "cpu"
TEACHER_FORCING = 0.5
PAD, SOS, EOS = 0, 1, 2
VOCAB, EMB, HIDDEN, BATCH, MAX_LEN = 10, 8, 12, 4, 6
pad_sequence = nn.utils.rnn.pad_sequence
pack_padded_sequence = nn.utils.rnn.pack_padded_sequence
pad_packed_sequence = nn.utils.rnn.pad_packed_sequence


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, EMB, padding_idx=PAD)
        self.rnn = nn.GRU(EMB, HIDDEN, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * HIDDEN, HIDDEN)

    def forward(self, src, lengths):
        embedded = self.embedding(src)
        packed = pack_padded_sequence(embedded, lengths.cpu(), batch_first=True, enforce_sorted=False)
        packed_out, hidden = self.rnn(packed)
        outputs, out_lengths = pad_packed_sequence(packed_out, batch_first=True, total_length=src.size(1))
        outputs = torch.tanh(self.fc(outputs))
        hidden = hidden[0] + hidden[1]  # (batch, hidden): the two directions' last states
        return outputs, hidden.unsqueeze(0), out_lengths


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = nn.Linear(HIDDEN, HIDDEN, bias=False)

    def forward(self, query, keys, mask):
        # query (B, H), keys (B, S, H), mask (B, S) True where a real token is
        scores = torch.bmm(keys, self.W(query).unsqueeze(2)).squeeze(2)
        scores = scores.masked_fill(~mask, float("-inf"))
        weights = F.softmax(scores, dim=1)
        context = torch.bmm(weights.unsqueeze(1), keys).squeeze(1)
        return context, weights


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, EMB, padding_idx=PAD)
        self.rnn = nn.GRU(EMB + HIDDEN, HIDDEN, batch_first=True)
        self.attention = Attention()
        self.out = nn.Linear(2 * HIDDEN, VOCAB)

    def forward(self, token, hidden, encoder_outputs, mask):
        embedded = self.embedding(token).unsqueeze(1)  # (B, 1, E)
        context, weights = self.attention(hidden[-1], encoder_outputs, mask)
        output, hidden = self.rnn(torch.cat([embedded, context.unsqueeze(1)], dim=2), hidden)
        logits = self.out(torch.cat([output.squeeze(1), context], dim=1))
        return F.log_softmax(logits, dim=1), hidden, weights


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.decoder = Decoder()

    def forward(self, src, lengths, trg=None, max_len=MAX_LEN + 1, teacher_forcing_ratio=0.0):
        encoder_outputs, hidden, _ = self.encoder(src, lengths)
        mask = torch.arange(src.size(1), device=src.device)[None, :] < lengths[:, None]
        token = torch.full((src.size(0),), SOS, dtype=torch.long, device=src.device)
        outputs, attentions = [], []
        steps = trg.size(1) if trg is not None else max_len
        for t in range(steps):
            output, hidden, weights = self.decoder(token, hidden, encoder_outputs, mask)
            outputs.append(output)
            attentions.append(weights)
            if trg is not None and random.random() < teacher_forcing_ratio:
                token = trg[:, t]
            else:
                _, topi = output.topk(1)
                token = topi.squeeze(-1).detach()
        return torch.stack(outputs, dim=1), torch.stack(attentions, dim=1)


def build():
    torch.manual_seed(0)
    return Seq2Seq()


def make_batch(step):
    """Random token sequences (3..VOCAB-1) of random lengths; the target is the reversed sequence
    followed by EOS."""
    rng = np.random.default_rng(step)
    lengths = rng.integers(2, MAX_LEN + 1, size=BATCH)
    sources = [rng.integers(3, VOCAB, size=n) for n in lengths]
    src = pad_sequence([torch.tensor(s) for s in sources], batch_first=True, padding_value=PAD)
    trg = pad_sequence([torch.tensor(np.append(s[::-1], EOS)) for s in sources], batch_first=True, padding_value=PAD)
    return src, torch.tensor(lengths), trg


def train(model, steps=5):
    random.seed(0)
    device = torch.device(DEVICE)
    model = model.to(device)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    criterion = nn.NLLLoss(ignore_index=PAD)
    losses = []
    for step in range(steps):
        model.train()
        src, lengths, trg = (t.to(device) for t in make_batch(step))
        optimizer.zero_grad()
        output, _ = model(src, lengths, trg, teacher_forcing_ratio=TEACHER_FORCING)
        loss = criterion(output.reshape(-1, VOCAB), trg.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        src, lengths, trg = (t.to(device) for t in make_batch(1000))
        output, attention = model(src, lengths)
        predicted = output.argmax(-1)
        seq_len = trg.size(1)
        token_accuracy = (predicted[:, :seq_len] == trg)[trg != PAD].float().mean().item()
        padded_attention = attention[
            ~(torch.arange(src.size(1), device=src.device)[None, :] < lengths[:, None])
            .unsqueeze(1)
            .expand_as(attention)
        ]
    return {
        "losses": losses,
        "token_accuracy": token_accuracy,
        "attention_row_sums": attention.sum(-1).flatten().tolist(),
        "attention_on_padding": padded_attention.abs().sum().item(),
    }


if __name__ == "__main__":
    print(train(build(), steps=60))
